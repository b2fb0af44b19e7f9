//! `describe` and the symbol lookup behind it: any named element of a schema (service, method,
//! message, field, oneof, enum, enum value, extension), and grpcurl's `X is a message:` heading
//! with the element's proto source below (a map entry describes its map field, a group's type
//! its group field).

use prost_reflect::{
    DescriptorPool, EnumDescriptor, EnumValueDescriptor, ExtensionDescriptor, FieldDescriptor,
    FileDescriptor, Kind, MessageDescriptor, MethodDescriptor, OneofDescriptor, ServiceDescriptor,
};

use crate::protoprint::Printer;

/// A named element of a schema.
#[derive(Clone, Debug)]
pub(crate) enum Symbol {
    /// A service.
    Service(ServiceDescriptor),
    /// A method.
    Method(MethodDescriptor),
    /// A message.
    Message(MessageDescriptor),
    /// A field of a message.
    Field(FieldDescriptor),
    /// A oneof.
    Oneof(OneofDescriptor),
    /// An enum.
    Enum(EnumDescriptor),
    /// An enum value.
    EnumValue(EnumValueDescriptor),
    /// An extension.
    Extension(ExtensionDescriptor),
}

impl Symbol {
    /// Finds `name` in `pool` as protobuf scopes names (an enum value also under its enum).
    pub(crate) fn lookup(pool: &DescriptorPool, name: &str) -> Option<Symbol> {
        if let Some(s) = pool.get_service_by_name(name) {
            return Some(Symbol::Service(s));
        }
        if let Some(m) = pool.get_message_by_name(name) {
            return Some(Symbol::Message(m));
        }
        if let Some(e) = pool.get_enum_by_name(name) {
            return Some(Symbol::Enum(e));
        }
        if let Some(x) = pool.get_extension_by_name(name) {
            return Some(Symbol::Extension(x));
        }
        let (parent, last) = name.rsplit_once('.').unwrap_or(("", name));
        if let Some(s) = pool.get_service_by_name(parent) {
            return s.methods().find(|m| m.name() == last).map(Symbol::Method);
        }
        if let Some(m) = pool.get_message_by_name(parent) {
            if let Some(f) = m.get_field_by_name(last) {
                return Some(Symbol::Field(f));
            }
            if let Some(o) = m.oneofs().find(|o| o.name() == last) {
                return Some(Symbol::Oneof(o));
            }
        }
        if let Some(e) = pool.get_enum_by_name(parent)
            && let Some(v) = e.get_value_by_name(last)
        {
            return Some(Symbol::EnumValue(v));
        }
        // Enum values live in their enum's parent scope.
        pool.all_enums()
            .find(|e| scope_of(e) == parent && e.get_value_by_name(last).is_some())
            .and_then(|e| e.get_value_by_name(last))
            .map(Symbol::EnumValue)
    }

    /// The file it is defined in.
    pub(crate) fn file(&self) -> FileDescriptor {
        match self {
            Symbol::Service(s) => s.parent_file(),
            Symbol::Method(m) => m.parent_service().parent_file(),
            Symbol::Message(m) => m.parent_file(),
            Symbol::Field(f) => f.parent_file(),
            Symbol::Oneof(o) => o.parent_message().parent_file(),
            Symbol::Enum(e) => e.parent_file(),
            Symbol::EnumValue(v) => v.parent_enum().parent_file(),
            Symbol::Extension(x) => x.parent_file(),
        }
    }

    /// The service, when it is one (`list SERVICE`).
    pub(crate) fn service(&self) -> Option<&ServiceDescriptor> {
        match self {
            Symbol::Service(s) => Some(s),
            _ => None,
        }
    }
}

fn scope_of(e: &EnumDescriptor) -> String {
    match e.parent_message() {
        Some(m) => m.full_name().to_owned(),
        None => e.package_name().to_owned(),
    }
}

/// grpcurl's `describe` of one symbol: `NAME is KIND:` then its source, newline-terminated.
pub(crate) fn describe(symbol: &Symbol) -> String {
    let mut p = Printer::new(&symbol.file());
    let (name, kind) = match symbol {
        Symbol::Message(m) => match described_field(m) {
            Some((f, kind)) => {
                p.field(&f, 0);
                (m.full_name().to_owned(), kind)
            }
            None => {
                p.message(m, 0);
                (m.full_name().to_owned(), "a message")
            }
        },
        Symbol::Field(f) => {
            p.field(f, 0);
            let kind = if f.is_group() {
                "a group field"
            } else {
                "a field"
            };
            (f.full_name().to_owned(), kind)
        }
        Symbol::Extension(x) => {
            p.extension(x);
            (x.full_name().to_owned(), "an extension")
        }
        Symbol::Oneof(o) => {
            p.oneof(o, 0);
            (o.full_name().to_owned(), "a one-of")
        }
        Symbol::Enum(e) => {
            p.enumeration(e, 0);
            (e.full_name().to_owned(), "an enum")
        }
        Symbol::EnumValue(v) => {
            p.enum_value(v, 0);
            let fqn = format!("{}.{}", v.parent_enum().full_name(), v.name());
            (fqn, "an enum value")
        }
        Symbol::Service(s) => {
            p.service(s, 0);
            (s.full_name().to_owned(), "a service")
        }
        Symbol::Method(m) => {
            p.method(m, 0);
            (m.full_name().to_owned(), "a method")
        }
    };
    let text = p.out.strip_suffix('\n').unwrap_or(&p.out);
    format!("{name} is {kind}:\n{text}\n")
}

/// The proto source of a method, for `-v`'s `Resolved method descriptor:`.
pub(crate) fn method_text(m: &MethodDescriptor) -> String {
    let mut p = Printer::new(&m.parent_service().parent_file());
    p.method(m, 0);
    p.out.strip_suffix('\n').unwrap_or(&p.out).to_owned()
}

/// A map entry or group type is described through the field that uses it.
fn described_field(m: &MessageDescriptor) -> Option<(FieldDescriptor, &'static str)> {
    let parent = m.parent_message()?;
    parent
        .fields()
        .find(|f| matches!(f.kind(), Kind::Message(t) if t == *m) && (f.is_map() || f.is_group()))
        .map(|f| {
            let kind = if f.is_map() {
                "the entry type for a map field"
            } else {
                "the type of a group field"
            };
            (f, kind)
        })
}
