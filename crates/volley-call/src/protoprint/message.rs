//! Messages, fields, oneofs and extensions in protoprint's form: a message's elements in its
//! sorted order, field labels as protoprint decides them, `map<K, V>` and group fields.

use prost_reflect::{
    EnumDescriptor, ExtensionDescriptor, FieldDescriptor, Kind, MessageDescriptor, OneofDescriptor,
};

use super::{
    Printer,
    options::{Opt, field_options, options_of},
};

impl Printer {
    pub(crate) fn message(&mut self, md: &MessageDescriptor, indent: i32) {
        self.leading(md.path(), indent);
        self.indent(indent);
        self.w("message ");
        self.w(&format!("{} ", md.name()));
        self.w("{\n");
        self.message_body(md, indent + 1);
        self.indent(indent);
        self.w("}\n");
        self.end_element(indent);
    }

    pub(super) fn message_body(&mut self, md: &MessageDescriptor, indent: i32) {
        self.options_long(&options_of(&md.options()), indent);
        let mut fields: Vec<FieldDescriptor> = md.fields().collect();
        fields.sort_by_key(FieldDescriptor::number);
        let mut done_oneofs: Vec<String> = Vec::new();
        for fd in &fields {
            match fd.containing_oneof().filter(|o| !o.is_synthetic()) {
                Some(o) if done_oneofs.iter().any(|n| n == o.name()) => {}
                Some(o) => {
                    done_oneofs.push(o.name().to_owned());
                    self.oneof(&o, indent);
                }
                None => self.field(fd, indent),
            }
        }
        let hidden: Vec<String> = fields
            .iter()
            .filter(|f| f.is_map() || f.is_group())
            .filter_map(|f| match f.kind() {
                Kind::Message(m) => Some(m.full_name().to_owned()),
                _ => None,
            })
            .collect();
        let mut nested: Vec<MessageDescriptor> = md
            .child_messages()
            .filter(|m| !hidden.iter().any(|h| h == m.full_name()))
            .collect();
        nested.sort_by(|a, b| a.name().cmp(b.name()));
        for m in &nested {
            self.message(m, indent);
        }
        let mut enums: Vec<EnumDescriptor> = md.child_enums().collect();
        enums.sort_by(|a, b| a.name().cmp(b.name()));
        for e in &enums {
            self.enumeration(e, indent);
        }
        let mut ranges: Vec<std::ops::Range<u32>> = md.extension_ranges().collect();
        ranges.sort_by_key(|r| r.start);
        if !ranges.is_empty() {
            self.indent(indent);
            self.w("extensions ");
            for (i, r) in ranges.iter().enumerate() {
                if i > 0 {
                    self.w(", ");
                }
                self.range(r.start as i64, r.end as i64 - 1, 536_870_911);
            }
            self.w(";\n");
        }
        let mut exts: Vec<ExtensionDescriptor> = md.child_extensions().collect();
        exts.sort_by(|a, b| {
            (a.containing_message().full_name(), a.number())
                .cmp(&(b.containing_message().full_name(), b.number()))
        });
        for group in exts.chunk_by(|a, b| a.containing_message() == b.containing_message()) {
            self.indent(indent);
            self.w("extend ");
            self.w(&format!(".{} ", group[0].containing_message().full_name()));
            self.w("{\n");
            for ext in group {
                self.extension_field(ext, indent + 1);
            }
            self.indent(indent);
            self.w("}\n");
        }
        let reserved = md.descriptor_proto().reserved_range.clone();
        if !reserved.is_empty() {
            let mut rs: Vec<(i64, i64)> = reserved
                .iter()
                .map(|r| (i64::from(r.start()), i64::from(r.end()) - 1))
                .collect();
            rs.sort();
            self.reserved_ranges(&rs, 536_870_911, indent);
        }
        let mut names: Vec<&str> = md.reserved_names().collect();
        names.sort();
        self.reserved_names(&names, indent);
    }

    pub(crate) fn field(&mut self, fd: &FieldDescriptor, indent: i32) {
        let label = label(fd);
        let group = fd.is_group();
        let type_name = type_string(&fd.kind(), fd.is_map(), group);
        let opts = field_options(fd);
        self.field_line(
            fd.path(),
            indent,
            label,
            group,
            &type_name,
            fd.name(),
            fd.number(),
            &opts,
        );
        if group {
            if let Kind::Message(m) = fd.kind() {
                self.w("{\n");
                self.message_body(&m, indent + 1);
                self.indent(indent);
                self.w("}\n");
            }
        } else {
            self.w(";");
        }
        self.end_element(indent);
    }

    fn extension_field(&mut self, ext: &ExtensionDescriptor, indent: i32) {
        let proto = ext.field_descriptor_proto();
        let label = match proto.label() {
            prost_types::field_descriptor_proto::Label::Repeated => Some("repeated"),
            prost_types::field_descriptor_proto::Label::Required => Some("required"),
            prost_types::field_descriptor_proto::Label::Optional => {
                (ext.parent_file().syntax() == prost_reflect::Syntax::Proto2).then_some("optional")
            }
        };
        let type_name = type_string(&ext.kind(), false, ext.is_group());
        let opts = options_of(&ext.options());
        self.field_line(
            ext.path(),
            indent,
            label,
            false,
            &type_name,
            ext.name(),
            ext.number(),
            &opts,
        );
        self.w(";");
        self.end_element(indent);
    }

    #[allow(clippy::too_many_arguments)]
    fn field_line(
        &mut self,
        path: &[i32],
        indent: i32,
        label: Option<&str>,
        group: bool,
        type_name: &str,
        name: &str,
        number: u32,
        opts: &[Opt],
    ) {
        self.leading(path, indent);
        self.indent(indent);
        if let Some(l) = label {
            self.w(&format!("{l} "));
        }
        if group {
            self.w("group ");
        }
        self.w(&format!("{type_name} "));
        if !group {
            self.w(&format!("{name} "));
        }
        self.w("= ");
        self.w(&format!("{number} "));
        self.options_short(opts, indent);
    }

    pub(crate) fn oneof(&mut self, od: &OneofDescriptor, indent: i32) {
        self.leading(od.path(), indent);
        self.indent(indent);
        self.w("oneof ");
        self.w(&format!("{} ", od.name()));
        self.w("{\n");
        self.options_long(&options_of(&od.options()), indent + 1);
        let mut fields: Vec<FieldDescriptor> = od.fields().collect();
        fields.sort_by_key(FieldDescriptor::number);
        for f in &fields {
            self.field(f, indent + 1);
        }
        self.indent(indent);
        self.w("}\n");
        self.end_element(indent);
    }

    pub(crate) fn extension(&mut self, ext: &ExtensionDescriptor) {
        self.w("extend ");
        self.w(&format!(".{} ", ext.containing_message().full_name()));
        self.w("{\n");
        self.extension_field(ext, 1);
        self.w("}\n");
    }
}

/// protoprint's label rule: proto3 `optional`, else any label but proto3's implicit one, none
/// for maps and oneof members.
fn label(fd: &FieldDescriptor) -> Option<&'static str> {
    let proto = fd.field_descriptor_proto();
    if proto.proto3_optional() {
        return Some("optional");
    }
    if fd.is_map() || fd.containing_oneof().is_some() {
        return None;
    }
    use prost_types::field_descriptor_proto::Label;
    match proto.label() {
        Label::Repeated => Some("repeated"),
        Label::Required => Some("required"),
        Label::Optional => {
            (fd.parent_file().syntax() == prost_reflect::Syntax::Proto2).then_some("optional")
        }
    }
}

/// A field's type as protoprint writes it: scalars by name, `map<K, V>`, groups by message name,
/// other messages and enums fully qualified with a leading dot.
pub(crate) fn type_string(kind: &Kind, map: bool, group: bool) -> String {
    if let (true, Kind::Message(entry)) = (map, kind) {
        let k = entry.map_entry_key_field();
        let v = entry.map_entry_value_field();
        return format!(
            "map<{}, {}>",
            type_string(&k.kind(), false, false),
            type_string(&v.kind(), false, false)
        );
    }
    match kind {
        Kind::Message(m) if group => m.name().to_owned(),
        Kind::Message(m) => format!(".{}", m.full_name()),
        Kind::Enum(e) => format!(".{}", e.full_name()),
        Kind::Double => "double".into(),
        Kind::Float => "float".into(),
        Kind::Int32 => "int32".into(),
        Kind::Int64 => "int64".into(),
        Kind::Uint32 => "uint32".into(),
        Kind::Uint64 => "uint64".into(),
        Kind::Sint32 => "sint32".into(),
        Kind::Sint64 => "sint64".into(),
        Kind::Fixed32 => "fixed32".into(),
        Kind::Fixed64 => "fixed64".into(),
        Kind::Sfixed32 => "sfixed32".into(),
        Kind::Sfixed64 => "sfixed64".into(),
        Kind::Bool => "bool".into(),
        Kind::String => "string".into(),
        Kind::Bytes => "bytes".into(),
    }
}
