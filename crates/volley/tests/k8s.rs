//! `volley bench --emit k8s-job`: the manifest is decoded strictly into Kubernetes' own API type
//! (`k8s.io/api/batch/v1.Job`, from the Go module proxy: unknown fields rejected), and its pods'
//! arguments parse back into the same plan (emitting from them gives the same manifest).

use std::process::Command;

use serde_json::Value;
use volley_testkit::{Volley, fails_in_one_line, ok_stdout, output_with_stdin, tool, volley};

const VOLLEY: Volley = volley!();

/// Decodes a manifest with Kubernetes' types; `Err` with the decoder's words if it refuses.
fn decode(manifest: &str) -> Result<Value, String> {
    let out = output_with_stdin(&mut Command::new(tool("k8s-job")), manifest.as_bytes());
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).expect("k8s-job prints JSON"))
}

fn emit(bench_args: &[&str]) -> String {
    let mut args = bench_args.to_vec();
    args.extend(["--emit", "k8s-job", "--image", "registry.test/volley:1"]);
    ok_stdout(&mut VOLLEY.command(&args))
}

#[test]
fn the_indexed_job_decodes_into_kubernetes_types_and_its_args_give_the_same_plan() {
    let manifest = emit(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-c",
        "8",
        "-z",
        "30s",
        "-r",
        "4000",
        "--shard",
        "auto/4",
        "--threshold",
        "p99<50ms",
        "-O",
        "html",
        "--cpus",
        "2",
        "api.test:9090",
    ]);
    let job = decode(&manifest).unwrap_or_else(|e| panic!("{e}\n{manifest}"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 4);
    assert_eq!(spec["parallelism"], 4);
    assert_eq!(spec["backoffLimit"], 0);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(
        pod["topologySpreadConstraints"][0]["topologyKey"],
        "kubernetes.io/hostname"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.test/volley:1");
    assert_eq!(c["resources"]["requests"]["cpu"], "2");
    let args: Vec<String> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("text").to_owned())
        .collect();
    assert_eq!(
        args.join(" "),
        "bench --insecure --call helloworld.Greeter.SayHello -c 8 -z 30s -r 4000 --shard auto/4 --cpus 2 api.test:9090 -O json"
    );

    // The pods' arguments are the same plan: emitting from them gives the same Job.
    let again: Vec<&str> = args.iter().map(String::as_str).collect();
    let second = decode(&emit(&again)).expect("the second manifest decodes");
    assert_eq!(second, job);
}

#[test]
fn the_decoder_is_strict() {
    // The test above can fail: a misspelt field is refused by Kubernetes' decoder.
    let manifest = emit(&[
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-c",
        "2",
        "-n",
        "10",
        "--shard",
        "auto/2",
        "api.test:9090",
    ]);
    let bad = manifest.replace("completionMode:", "completionMod:");
    let e = decode(&bad).expect_err("an unknown field");
    assert!(e.contains("completionMod"), "{e}");
}

#[test]
fn emit_refuses_what_kubernetes_cannot_run() {
    let base = [
        "bench",
        "--insecure",
        "--call",
        "helloworld.Greeter.SayHello",
        "-c",
        "4",
        "-n",
        "10",
    ];
    let cases: [(&[&str], &str); 4] = [
        (
            &["--shard", "auto/2", "--emit", "k8s-job", "h:1"],
            "needs --image",
        ),
        (
            &["--emit", "k8s-job", "--image", "i", "h:1"],
            "needs --shard auto/N",
        ),
        (
            &["--shard", "auto/2", "--emit", "k8s-job", "--image", "i"],
            "needs the target HOST:PORT",
        ),
        (
            &[
                "--shard",
                "auto/2",
                "--start-at",
                "+30s",
                "--emit",
                "k8s-job",
                "--image",
                "i",
                "h:1",
            ],
            "give --start-at as an RFC 3339 time",
        ),
    ];
    for (flags, want) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(flags);
        let line = fails_in_one_line(&mut VOLLEY.command(&args));
        assert!(line.contains(want), "{flags:?}: {line}");
    }
}
