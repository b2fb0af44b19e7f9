//! Stub files and folders: found under the `--stub` paths (subfolders too), read and checked at
//! start (and again when they change: `watch`). A file's stub with no `id` gets one made from
//! its file and position, so ids stay the same across reloads and restarts.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use prost_reflect::DescriptorPool;

use crate::{
    MockError,
    check::check,
    format::{parse_file, raw, refused, unknown_keys},
    model::{Origin, Stub},
};

/// The stub files under `paths` (folders walked, subfolders too), sorted.
pub(crate) fn stub_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, MockError> {
    let mut out = Vec::new();
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), MockError> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|reason| MockError::StubFolder {
                path: dir.to_owned(),
                reason,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "yaml" | "yml")
            ) {
                out.push(p);
            }
        }
        Ok(())
    }
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(MockError::NoStubPath(p.clone()));
        }
    }
    Ok(out)
}

/// The namespace of the ids made for stubs that have none (a UUID of its own, so that these ids
/// never equal an id made elsewhere from the same name).
const STUB_IDS: uuid::Uuid = uuid::Uuid::from_u128(0x6c0b_5e9e_8a3f_4f1e_9d2c_1b7a_0e4d_3f21);

/// The id of a file's stub that has none: a name-based UUID (v5: SHA-1 of the file's path and
/// the stub's position), the same for the same file and position across reloads, restarts and
/// builds of volley.
fn id_for(file: &Path, n: usize) -> uuid::Uuid {
    uuid::Uuid::new_v5(&STUB_IDS, format!("{}#{n}", file.display()).as_bytes())
}

/// Whether a parsed item has any of the keys that make a stub.
pub(crate) fn looks_like_a_stub(v: &serde_json::Value) -> bool {
    v.as_object().is_some_and(|m| {
        ["service", "method", "input", "inputs", "output"]
            .iter()
            .any(|k| m.contains_key(*k))
    })
}

/// Every stub of the files under `paths`, checked against `pools`. A stub that does not parse
/// or fit is an error naming `file:line` and the stub's number; an unknown key is refused when
/// `strict`, else one warning line.
pub(crate) fn read_files(
    paths: &[PathBuf],
    pools: &[DescriptorPool],
    strict: bool,
) -> Result<Vec<Arc<Stub>>, MockError> {
    let mut out = Vec::new();
    for file in stub_files(paths)? {
        let items = parse_file(&file)?;
        if !items.is_empty() && items.iter().all(|i| !looks_like_a_stub(&i.value)) {
            // A YAML or JSON file beside the stubs that is not one (buf.yaml, a config):
            // GripMock passes over files it cannot read as stubs.
            tracing::warn!(
                "{}: not a stub file (nothing in it names a service or a method); skipped",
                file.display()
            );
            continue;
        }
        for (i, item) in items.into_iter().enumerate() {
            let n = i + 1;
            let at = format!("{}:{}: stub #{n}", file.display(), item.line);
            for key in unknown_keys(&item.value, strict) {
                if strict {
                    return Err(MockError::Stub(format!("{at}: {}", refused(&key))));
                }
                tracing::warn!("{at}: unknown key {key:?} skipped (--strict refuses it)");
            }
            let r = raw(&item.value).map_err(|e| MockError::Stub(format!("{at}: {e}")))?;
            let id = match &r.id {
                Some(id) => uuid::Uuid::parse_str(id)
                    .map_err(|_| MockError::Stub(format!("{at}: id {id:?} is not a UUID")))?,
                None => id_for(&file, n),
            };
            let source = format!("{} stub #{n}", file.display());
            let stubs = check(&item.value, r, pools, source, Origin::File, id)
                .map_err(|e| MockError::Stub(format!("{at}: {e}")))?;
            out.extend(stubs.into_iter().map(Arc::new));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_walked_for_stub_files_only() {
        let dir = crate::testkit::temp_dir("load");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for f in ["b.yaml", "a.json", "sub/c.yml", "x.proto", "notes.txt"] {
            std::fs::write(dir.join(f), "[]").unwrap();
        }
        let files = stub_files(std::slice::from_ref(&dir)).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a.json", "b.yaml", "sub/c.yml"]);
        assert!(stub_files(&[dir.join("none")]).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ids_are_stable_per_file_and_position() {
        let f = Path::new("s/a.yaml");
        assert_eq!(id_for(f, 1), id_for(f, 1));
        assert_ne!(id_for(f, 1), id_for(f, 2));
    }
}
