//! One more line where grpcurl's error stops short of saying what to do: the flag that changes
//! the outcome, or the nearest name. Printed as `Hint: ...` after grpcurl's own lines (as
//! grpcurl prints `Warning: ...`), so the first line and the exit code stay grpcurl's.

use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor, ServiceDescriptor};
use rustls::CertificateError;

use crate::go_json::Node;

/// A server without reflection, and no schema given.
pub(crate) const NO_REFLECTION: &str = "the server does not serve reflection: give its schema with \
                                 -proto FILE (and -import-path DIR) or -protoset FILE";

/// The names among `among` nearest to `want` (case aside, by edit distance), best first: at
/// most three, and only those within a third of the longer name's length (two edits at least).
pub(crate) fn closest<'a>(want: &str, among: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let w = want.to_lowercase();
    let mut scored: Vec<(usize, &str)> = among
        .into_iter()
        .map(|c| (distance(&w, &c.to_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(want.len()) / 3).max(2))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// Levenshtein distance over chars.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// `did you mean X?` and what there is, for a name that is not among `names` (`what`:
/// "method", "service").
pub(crate) fn suggest(want: &str, names: &[String], what: &str, of: &str) -> String {
    let near = closest(want, names.iter().map(String::as_str));
    let listed = if names.len() <= 12 {
        format!("{of} has: {}", names.join(", "))
    } else {
        format!("{of} has {} {what}s", names.len())
    };
    match near.as_slice() {
        [] => listed,
        [one] => format!("did you mean {one}? ({listed})"),
        many => format!("did you mean one of {}? ({listed})", many.join(", ")),
    }
}

/// A method `method` that `service` does not have.
pub(crate) fn no_method(service: &ServiceDescriptor, method: &str) -> String {
    let names: Vec<String> = service.methods().map(|m| m.name().to_owned()).collect();
    let near = closest(method, names.iter().map(String::as_str));
    let full = service.full_name();
    let listed = format!("{full} has: {}", names.join(", "));
    match near.as_slice() {
        [] => listed,
        [one] => format!("did you mean {full}/{one}? ({listed})"),
        many => {
            let paths: Vec<String> = many.iter().map(|m| format!("{full}/{m}")).collect();
            format!("did you mean one of {}? ({listed})", paths.join(", "))
        }
    }
}

/// What to change when a TLS handshake failed with `e` (`plaintext`: whether `-plaintext` was
/// given).
pub(crate) fn tls(e: &std::io::Error) -> Option<String> {
    let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(match inner {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "no CA you trust signed the server's certificate: give the CA that did with -cacert \
             FILE (a self-signed certificate can be its own CA), or skip the check with -insecure"
                .into()
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "the certificate does not name the host you dialled: -servername NAME checks it \
              against one of the names it has (or dial that name)"
            .into(),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. },
        ) => "the server's certificate is outside its validity dates (or this machine's clock \
              is): renew it, or skip the check with -insecure"
            .into(),
        rustls::Error::InvalidMessage(_) => "the server does not speak TLS: add -plaintext".into(),
        rustls::Error::AlertReceived(_) => {
            "the server refused the handshake: if it asks for a client certificate, give -cert \
             FILE -key FILE"
                .into()
        }
        _ => return None,
    })
}

/// A plaintext dial the server closed during the HTTP/2 handshake.
pub(crate) const PLAINTEXT_TO_TLS: &str = "the server closed the connection before HTTP/2 began: if it \
                                    speaks TLS, leave -plaintext out (and give -cacert FILE or \
                                    -insecure)";

/// The first field of `node` that `desc` does not have: `did you mean ...?` and the message's
/// fields.
pub(crate) fn unknown_field(desc: &MessageDescriptor, node: &Node) -> Option<String> {
    let Node::Object(kv) = node else {
        return None;
    };
    for (key, value) in kv {
        match field_named(desc, key) {
            None if !key.starts_with('@') => {
                let names: Vec<String> = desc.fields().map(|f| f.name().to_owned()).collect();
                return Some(format!(
                    "-d: {}",
                    suggest(key, &names, "field", desc.full_name())
                ));
            }
            None => {}
            Some(f) => {
                let (kind, items) = elements(&f, value, key);
                if let Kind::Message(inner) = kind
                    && let Some(h) = items.iter().find_map(|(_, n)| unknown_field(&inner, n))
                {
                    return Some(h);
                }
            }
        }
    }
    None
}

/// Where in `node` a value does not fit its field, which grpcurl's line (`bad input: expecting
/// number ; instead got true`) leaves out: the field's path in the JSON and its type, as
/// `-d: items[1].id is a field of type int32; true does not fit it`; `message` is the value's
/// number among `-d`'s, named when it is not the first.
pub(crate) fn misfit(
    desc: &MessageDescriptor,
    node: &Node,
    allow_unknown: bool,
    message: usize,
) -> Option<String> {
    let (path, ty, value) = misfit_in(desc, node, allow_unknown, "")?;
    let which = match message {
        1 => String::new(),
        n => format!(" (message {n})"),
    };
    Some(format!(
        "-d{which}: {path} is a field of type {ty}; {} does not fit it",
        shown(value)
    ))
}

/// The path, the type's name and the value of the first field under `prefix` that refuses its
/// value; inside messages, lists and maps, the deepest part that refuses.
fn misfit_in<'a>(
    desc: &MessageDescriptor,
    node: &'a Node,
    allow_unknown: bool,
    prefix: &str,
) -> Option<(String, String, &'a Node)> {
    let Node::Object(kv) = node else {
        return None;
    };
    for (key, value) in kv {
        let Some(fd) = field_named(desc, key) else {
            continue;
        };
        if crate::json_in::field(&fd, value, allow_unknown).is_ok() {
            continue;
        }
        let path = match prefix {
            "" => key.clone(),
            _ => format!("{prefix}.{key}"),
        };
        let (kind, items) = elements(&fd, value, &path);
        for (p, n) in items {
            if crate::json_in::element(&kind, n, allow_unknown, fd.is_map()).is_ok() {
                continue;
            }
            if let Kind::Message(m) = &kind
                && let Some(deeper) = misfit_in(m, n, allow_unknown, &p)
            {
                return Some(deeper);
            }
            return Some((p, type_name(&kind, false), n));
        }
        return Some((path, type_name(&fd.kind(), fd.is_map()), value));
    }
    None
}

/// A message's field by the name JSON gives it, or its proto name (as jhump's reader takes both).
fn field_named(desc: &MessageDescriptor, key: &str) -> Option<FieldDescriptor> {
    desc.get_field_by_json_name(key)
        .or_else(|| desc.get_field_by_name(key))
}

/// What a field's JSON value holds, each part with its path from `path`: a list's elements, a
/// map's values, or the value itself; and the kind each part must be.
fn elements<'a>(
    fd: &FieldDescriptor,
    value: &'a Node,
    path: &str,
) -> (Kind, Vec<(String, &'a Node)>) {
    let kind = match (fd.is_map(), fd.kind()) {
        (true, Kind::Message(entry)) => entry.map_entry_value_field().kind(),
        (_, kind) => kind,
    };
    let items = match value {
        Node::Array(a) if fd.is_list() => a
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("{path}[{i}]"), n))
            .collect(),
        Node::Object(o) if fd.is_map() => o
            .iter()
            .map(|(k, n)| (format!("{path}[{}]", crate::args::go_quote(k)), n))
            .collect(),
        v => vec![(path.to_owned(), v)],
    };
    (kind, items)
}

/// A field type as a .proto file writes it (protoprint's words, without the leading dot of a
/// fully-qualified name).
fn type_name(kind: &Kind, map: bool) -> String {
    let name = crate::protoprint::type_string(kind, map, false);
    name.strip_prefix('.').map(str::to_owned).unwrap_or(name)
}

/// A JSON value as the user wrote it, shortened to its kind where it is a whole object or list.
fn shown(node: &Node) -> String {
    match node {
        Node::Object(_) => "an object".into(),
        Node::Array(_) => "a list".into(),
        Node::Str(s) => crate::args::go_quote(s),
        Node::Num(n) => n.clone(),
        Node::Bool(b) => b.to_string(),
        Node::Null => "null".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_names_first() {
        let names = ["SayHello", "SayGoodbye", "Ping"];
        assert_eq!(closest("sayhelo", names), ["SayHello"]);
        assert_eq!(closest("Pong", names), ["Ping"]);
        assert!(closest("Delete", names).is_empty());
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions_name_what_there_is() {
        let names: Vec<String> = ["name", "id"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            suggest("nme", &names, "field", "a.B"),
            "did you mean name? (a.B has: name, id)"
        );
        assert_eq!(suggest("zzz", &names, "field", "a.B"), "a.B has: name, id");
    }

    #[test]
    fn a_misfit_is_named_by_its_path_and_type() {
        let pool =
            prost_reflect::DescriptorPool::decode(volley_proto::pb::FILE_DESCRIPTOR_SET).unwrap();
        let at = |msg: &str, json: &str| {
            let desc = pool.get_message_by_name(msg).unwrap();
            let node = crate::go_json::Values::new(json.as_bytes())
                .next_value()
                .unwrap()
                .unwrap();
            misfit(&desc, &node, false, 1)
        };
        assert_eq!(
            at("grpc.health.v1.HealthCheckRequest", r#"{"service":1}"#).unwrap(),
            "-d: service is a field of type string; 1 does not fit it"
        );
        // Inside a message, and inside a list of messages.
        assert_eq!(
            at(
                "grpc.reflection.v1.ServerReflectionRequest",
                r#"{"host":"h","fileContainingExtension":{"containingType":"a","extensionNumber":true}}"#
            )
            .unwrap(),
            "-d: fileContainingExtension.extensionNumber is a field of type int32; true does not fit it"
        );
        assert_eq!(
            at(
                "grpc.reflection.v1.ListServiceResponse",
                r#"{"service":[{"name":"a"},{"name":1}]}"#
            )
            .unwrap(),
            "-d: service[1].name is a field of type string; 1 does not fit it"
        );
        // A message given something that is not an object.
        assert_eq!(
            at(
                "grpc.reflection.v1.ServerReflectionRequest",
                r#"{"fileContainingExtension":"x"}"#
            )
            .unwrap(),
            "-d: fileContainingExtension is a field of type grpc.reflection.v1.ExtensionRequest; \"x\" does not fit it"
        );
        // Data that fits has no misfit.
        assert_eq!(
            at("grpc.health.v1.HealthCheckRequest", r#"{"service":"a"}"#),
            None
        );
    }
}
