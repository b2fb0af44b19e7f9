//! Enums, enum values, services and methods in protoprint's form: values sorted by number with 0
//! first in open enums, methods by name, `rpc M ( .a.In ) returns ( stream .a.Out );`.

use prost_reflect::{EnumDescriptor, EnumValueDescriptor, MethodDescriptor, ServiceDescriptor};

use super::{Printer, options::options_of};

impl Printer {
    pub(crate) fn enumeration(&mut self, ed: &EnumDescriptor, indent: i32) {
        self.leading(ed.path(), indent);
        self.indent(indent);
        self.w("enum ");
        self.w(&format!("{} ", ed.name()));
        self.w("{\n");
        self.options_long(&options_of(&ed.options()), indent + 1);
        let open = ed.parent_file().syntax() != prost_reflect::Syntax::Proto2;
        let mut values: Vec<EnumValueDescriptor> = ed.values().collect();
        values.sort_by(|a, b| {
            let key = |v: &EnumValueDescriptor| (!(open && v.number() == 0), v.number());
            key(a).cmp(&key(b)).then_with(|| a.name().cmp(b.name()))
        });
        for v in &values {
            self.enum_value(v, indent + 1);
        }
        let mut ranges: Vec<(i64, i64)> = ed
            .reserved_ranges()
            .map(|r| (i64::from(*r.start()), i64::from(*r.end())))
            .collect();
        if !ranges.is_empty() {
            ranges.sort();
            self.reserved_ranges(&ranges, i64::from(i32::MAX), indent + 1);
        }
        let mut names: Vec<&str> = ed.reserved_names().collect();
        names.sort();
        self.reserved_names(&names, indent + 1);
        self.indent(indent);
        self.w("}\n");
        self.end_element(indent);
    }

    pub(crate) fn enum_value(&mut self, v: &EnumValueDescriptor, indent: i32) {
        self.leading(v.path(), indent);
        self.indent(indent);
        self.w(&format!("{} ", v.name()));
        self.w("= ");
        self.w(&format!("{} ", v.number()));
        self.options_short(&options_of(&v.options()), indent);
        self.w(";");
        self.end_element(indent);
    }

    pub(crate) fn service(&mut self, sd: &ServiceDescriptor, indent: i32) {
        self.leading(sd.path(), indent);
        self.indent(indent);
        self.w("service ");
        self.w(&format!("{} ", sd.name()));
        self.w("{\n");
        self.options_long(&options_of(&sd.options()), indent + 1);
        let mut methods: Vec<MethodDescriptor> = sd.methods().collect();
        methods.sort_by(|a, b| a.name().cmp(b.name()));
        for m in &methods {
            self.method(m, indent + 1);
        }
        self.indent(indent);
        self.w("}\n");
        self.end_element(indent);
    }

    pub(crate) fn method(&mut self, md: &MethodDescriptor, indent: i32) {
        self.leading(md.path(), indent);
        self.indent(indent);
        self.w("rpc ");
        self.w(&format!("{} ", md.name()));
        self.w("( ");
        let stream = |on: bool| if on { "stream " } else { "" };
        self.w(&format!(
            "{}.{} ",
            stream(md.is_client_streaming()),
            md.input().full_name()
        ));
        self.w(") returns ( ");
        self.w(&format!(
            "{}.{} ",
            stream(md.is_server_streaming()),
            md.output().full_name()
        ));
        self.w(") ");
        let opts = options_of(&md.options());
        if opts.is_empty() {
            self.w(";");
        } else {
            self.w("{\n");
            self.options_long(&opts, indent + 1);
            self.indent(indent);
            self.w("}\n");
        }
        self.end_element(indent);
    }
}
