//! The command line itself: `--version` names the commit, and the completion scripts load in a
//! real bash and complete volley's subcommands and flags.

use std::process::Command;

use volley_testkit::{Volley, ok_stdout, volley};

const VOLLEY: Volley = volley!();

#[test]
fn the_version_names_the_commit() {
    let out = ok_stdout(&mut VOLLEY.command(&["--version"]));
    let rest = out
        .trim()
        .strip_prefix(concat!("volley ", env!("CARGO_PKG_VERSION"), " (commit "))
        .unwrap_or_else(|| panic!("{out}"));
    let commit = rest.strip_suffix(')').unwrap_or_else(|| panic!("{out}"));
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{out}"
    );
}

/// What bash offers after `words`, with the cursor on the last one.
fn bash_completes(words: &[&str]) -> Vec<String> {
    let script = format!(
        "source <({bin} completions bash)\nCOMP_WORDS=({words})\nCOMP_CWORD={cword}\n_volley volley\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        bin = VOLLEY.bin().display(),
        words = words.join(" "),
        cword = words.len() - 1,
    );
    let out = ok_stdout(Command::new("bash").args(["-c", &script]));
    out.lines().map(String::from).collect()
}

#[test]
fn bash_completes_subcommands_and_flags() {
    let subcommands = bash_completes(&["volley", ""]);
    for s in [
        "serve",
        "bench",
        "call",
        "mock",
        "report",
        "lab",
        "completions",
    ] {
        assert!(subcommands.iter().any(|c| c == s), "{s} in {subcommands:?}");
    }
    // The experiment harness lives under `volley lab` (clap_complete's bash script still offers
    // the hidden old names, which `--help` leaves out).
    let tools = bash_completes(&["volley", "lab", ""]);
    for s in ["orders", "gateway", "link"] {
        assert!(tools.iter().any(|c| c == s), "{s} in {tools:?}");
    }
    let flags = bash_completes(&["volley", "bench", "--conc"]);
    assert!(flags.iter().any(|c| c == "--concurrency"), "{flags:?}");
    // clap's bash script offers a positional's values whole; bash filters them as they are typed.
    let shells = bash_completes(&["volley", "completions", ""]);
    for s in ["bash", "zsh", "fish"] {
        assert!(shells.iter().any(|c| c == s), "{s} in {shells:?}");
    }
}

#[test]
fn every_shell_gets_a_script() {
    for (shell, marker) in [
        ("bash", "complete -F _volley"),
        ("zsh", "#compdef volley"),
        ("fish", "complete -c volley"),
    ] {
        let script = ok_stdout(&mut VOLLEY.command(&["completions", shell]));
        assert!(script.contains(marker), "{shell}: {marker}");
    }
}

/// `volley orders`, `volley link` and `volley serve gateway`, the harness's names before it
/// moved under `volley lab`, still run (hidden from `--help`): scripts written for them work.
#[test]
fn the_harness_answers_to_its_old_names() {
    for (old, new) in [
        (
            &["orders", "--clients", "0"][..],
            &["lab", "orders", "--clients", "0"][..],
        ),
        (
            &[
                "link",
                "--listen",
                "127.0.0.1:0",
                "--to",
                "x:1",
                "--delay",
                "1ms",
                "--jitter",
                "2ms",
            ][..],
            &[
                "lab",
                "link",
                "--listen",
                "127.0.0.1:0",
                "--to",
                "x:1",
                "--delay",
                "1ms",
                "--jitter",
                "2ms",
            ][..],
        ),
        (
            &[
                "serve",
                "gateway",
                "--backend",
                "127.0.0.1:1",
                "--strategy",
                "bogus",
            ][..],
            &[
                "lab",
                "gateway",
                "--backend",
                "127.0.0.1:1",
                "--strategy",
                "bogus",
            ][..],
        ),
    ] {
        let a = VOLLEY.command(old).output().expect("run");
        let b = VOLLEY.command(new).output().expect("run");
        assert!(!a.status.success(), "{old:?} should fail on its bad flag");
        assert_eq!(a.status.code(), b.status.code(), "{old:?} vs {new:?}");
        assert_eq!(
            String::from_utf8_lossy(&a.stderr),
            String::from_utf8_lossy(&b.stderr),
            "{old:?} vs {new:?}"
        );
    }
    let help = ok_stdout(&mut VOLLEY.command(&["--help"]));
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        listed[..7],
        ["serve", "bench", "call", "run", "mock", "report", "lab"],
        "{help}"
    );
    assert!(
        !listed.contains(&"orders") && !listed.contains(&"link"),
        "{help}"
    );
}

#[test]
fn bench_help_is_grouped_by_section() {
    // `volley bench --help` lists its flags under headings in the order a run is described:
    // what to call, how hard, with what, what comes out, what passes, how wide, how to watch.
    let help = ok_stdout(&mut VOLLEY.command(&["bench", "--help"]));
    let headings: Vec<&str> = help
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':') && !l.starts_with("Usage"))
        .collect();
    assert_eq!(
        headings,
        [
            "Arguments:",
            "Options:",
            "Target:",
            "TLS:",
            "Load:",
            "Data:",
            "Streams:",
            "Output:",
            "Connections:",
            "HTTP load:",
            "Gates:",
            "Scale:",
            "Watch:",
        ],
        "{help}"
    );
    // -H sits with the data a call carries, and says what it is on a gRPC target.
    let data = help
        .split("Data:")
        .nth(1)
        .unwrap()
        .split("Streams:")
        .next()
        .unwrap();
    assert!(data.contains("-H, --header"), "{data}");
    assert!(data.contains("metadata"), "{data}");
}
