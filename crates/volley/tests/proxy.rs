//! Outbound proxies, as grpc-go dials through them: a target reachable only through a real
//! CONNECT proxy (tinyproxy, Debian's, installed by scripts/install-test-tools) in three network
//! namespaces (client, proxy, target; nothing forwards between client and target), reached by
//! `volley call` and `volley bench` with grpcurl's and ghz's command lines and by `volley
//! gateway`, all under `HTTPS_PROXY` (or `--proxy`); `NO_PROXY` listing the target sends them
//! around the proxy, where the target cannot be reached. Needs root (CAP_NET_ADMIN), as CI has.

use std::{
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use volley_testkit::{Volley, volley};

const VOLLEY: Volley = volley!();

const CLIENT_IP: &str = "10.210.0.1";
const PROXY_IP: &str = "10.210.0.2";
const PROXY_TARGET_SIDE_IP: &str = "10.211.0.1";
const TARGET_IP: &str = "10.211.0.2";

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("run ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Three namespaces and two veth pairs, removed (with what runs in them) on drop.
struct Net {
    names: [String; 3],
    children: Vec<Child>,
}

impl Net {
    fn new() -> Net {
        let pid = std::process::id();
        let names = [
            format!("vpc{pid}"),
            format!("vpp{pid}"),
            format!("vpt{pid}"),
        ];
        let net = Net {
            names: names.clone(),
            children: Vec::new(),
        };
        let [c, p, t] = &names;
        for n in &names {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        let (cp, pc, pt, tp) = (
            format!("vc{pid}"),
            format!("vq{pid}"),
            format!("vr{pid}"),
            format!("vt{pid}"),
        );
        ip(&[
            "link", "add", &cp, "netns", c, "type", "veth", "peer", "name", &pc, "netns", p,
        ]);
        ip(&[
            "link", "add", &pt, "netns", p, "type", "veth", "peer", "name", &tp, "netns", t,
        ]);
        for (ns, dev, addr) in [
            (c, &cp, CLIENT_IP),
            (p, &pc, PROXY_IP),
            (p, &pt, PROXY_TARGET_SIDE_IP),
            (t, &tp, TARGET_IP),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        // The proxy's namespace does not forward (a new namespace's default): the client can
        // reach the target only through the proxy's CONNECT (checked below).
        net
    }

    fn client(&self) -> &str {
        &self.names[0]
    }

    /// A command run in namespace `ns`.
    fn exec(&self, ns: &str, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, program]).args(args);
        cmd.stdin(Stdio::null());
        cmd
    }

    fn spawn(&mut self, mut cmd: Command) {
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.children.push(child);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Waits until something listens on `addr` inside `ns` (checked with a volley call to it
/// that only needs the TCP connect: bash's /dev/tcp).
fn wait_listening(net: &Net, ns: &str, addr: &str) {
    let (host, port) = addr.split_once(':').unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let ok = net
            .exec(
                ns,
                "bash",
                &["-c", &format!("exec 3<>/dev/tcp/{host}/{port}")],
            )
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            return;
        }
        assert!(Instant::now() < until, "nothing listens on {addr} in {ns}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn volley_in(net: &Net, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = net.exec(net.client(), VOLLEY.bin().to_str().unwrap(), args);
    cmd.env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn clients_reach_a_target_only_a_connect_proxy_can_reach_and_no_proxy_is_respected() {
    if let Some(why) = volley_lab::netns::unavailable() {
        panic!("this test needs network namespaces: {why}");
    }
    let dir = std::env::temp_dir().join(format!("volley-proxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tinyproxy.conf");
    std::fs::write(
        &conf,
        format!(
            "Port 8888\nListen {PROXY_IP}\nTimeout 60\nAllow 10.210.0.0/24\nMaxClients 64\n\
             LogLevel Connect\nLogFile \"{}\"\n",
            dir.join("tinyproxy.log").display()
        ),
    )
    .unwrap();
    let mut net = Net::new();
    let target = format!("{TARGET_IP}:9090");
    let proxy = format!("http://{PROXY_IP}:8888");
    let t = net.names[2].clone();
    let p = net.names[1].clone();
    let serve = net.exec(
        &t,
        VOLLEY.bin().to_str().unwrap(),
        &["serve", "--addr", &target, "--threads", "1"],
    );
    net.spawn(serve);
    let tinyproxy = net.exec(&p, "tinyproxy", &["-d", "-c", conf.to_str().unwrap()]);
    net.spawn(tinyproxy);
    wait_listening(&net, &t, &target);
    wait_listening(&net, &p, &format!("{PROXY_IP}:8888"));

    let via = [("HTTPS_PROXY", proxy.as_str())];
    // grpcurl's command line, without a proxy: the target cannot be reached from here.
    let hello = [
        "call",
        "-plaintext",
        "-max-time",
        "3",
        "-d",
        r#"{"name":"proxied"}"#,
        &target,
        "helloworld.Greeter/SayHello",
    ];
    let direct = volley_in(&net, &[], &hello);
    assert!(
        !direct.status.success(),
        "reached without the proxy: {}",
        text(&direct)
    );
    // Through it.
    let out = volley_in(&net, &via, &hello);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Hello proxied"), "{}", text(&out));
    // ghz's command line, on both of the bench's clients.
    for client in ["default", "h2"] {
        let mut env = via.to_vec();
        if client == "h2" {
            env.push(("VOLLEY_BENCH_CLIENT", "h2"));
        }
        let out = volley_in(
            &net,
            &env,
            &[
                "bench",
                "--insecure",
                "--call",
                "helloworld.Greeter.SayHello",
                "-d",
                r#"{"name":"b"}"#,
                "-n",
                "200",
                "-c",
                "4",
                &target,
            ],
        );
        assert!(out.status.success(), "{client}: {}", text(&out));
        assert!(
            text(&out).contains("[OK]   200 responses"),
            "{client}: {}",
            text(&out)
        );
    }
    // NO_PROXY naming the target (as a CIDR, and as the address): straight there, unreachable.
    for no in ["10.211.0.0/16", TARGET_IP] {
        let out = volley_in(&net, &[("HTTPS_PROXY", &proxy), ("NO_PROXY", no)], &hello);
        assert!(
            !out.status.success(),
            "NO_PROXY={no} went through the proxy: {}",
            text(&out)
        );
    }
    // The gateway, its upstream behind the proxy: `--proxy`, and HTTPS_PROXY.
    for (env, flags) in [
        (&[][..], &["--proxy", proxy.as_str()][..]),
        (&via[..], &[][..]),
    ] {
        let mut args = vec![
            "gateway",
            "--upstream",
            &target,
            "--addr",
            "127.0.0.1:18765",
            "--threads",
            "1",
        ];
        args.extend(flags);
        let mut cmd = net.exec(net.client(), VOLLEY.bin().to_str().unwrap(), &args);
        cmd.env_remove("HTTPS_PROXY").env_remove("NO_PROXY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut gw = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let client = net.client().to_owned();
        wait_listening(&net, &client, "127.0.0.1:18765");
        let out = net
            .exec(
                &client,
                "curl",
                &[
                    "-s",
                    "-H",
                    "content-type: application/json",
                    "-d",
                    r#"{"name":"gw"}"#,
                    "http://127.0.0.1:18765/helloworld.Greeter/SayHello",
                ],
            )
            .output()
            .unwrap();
        let _ = gw.kill();
        let _ = gw.wait();
        assert_eq!(text(&out).trim(), r#"{"message":"Hello gw"}"#, "{flags:?}");
    }
    // The proxy saw the tunnels.
    let log = std::fs::read_to_string(dir.join("tinyproxy.log")).unwrap_or_default();
    assert!(log.contains(&format!("CONNECT {target} HTTP/1.1")), "{log}");
    drop(net);
    let _ = std::fs::remove_dir_all(&dir);
}
