//! `lvsnic keepalived`: realistic keepalived.conf files to `ipvsadm -S -n`
//! text (expected texts written here from keepalived's semantics and
//! ipvsadm's save format), diagnostics with file and line, includes, and
//! `--load` into a running daemon.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use std::path::Path;
use std::process::Command;

fn keepalived(args: &[&str]) -> Ran {
    let o = Command::new(LVSNIC).arg("keepalived").args(args).output().unwrap();
    Ran {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn conv(path: &Path) -> Ran {
    keepalived(&[path.to_str().unwrap()])
}

/// The example of the spec (shared/ipvs/ipvsadm-and-keepalived.md §5).
const SPEC_SAMPLE: &str = "\
virtual_server 10.10.10.2 80 {
    delay_loop 6
    lb_algo wrr                # == lvs_sched wrr
    lb_kind DR                 # == lvs_method DR
    persistence_timeout 50
    persistence_granularity 255.255.255.0
    protocol TCP

    sorry_server 192.168.200.200 80

    real_server 192.168.200.2 80 {
        weight 3
        inhibit_on_failure
        HTTP_GET {
            url {
              path /health
              status_code 200
            }
            connect_timeout 3
            retry 3
            delay_before_retry 3
        }
    }
    real_server 192.168.200.3 80 {
        weight 1
        TCP_CHECK {
            connect_port 80
            connect_timeout 3
        }
    }
}
";

#[test]
fn spec_sample() {
    let dir = tmpdir("ka-spec");
    let f = write(&dir, "keepalived.conf", SPEC_SAMPLE);
    let r = conv(&f);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "-A -t 10.10.10.2:80 -s wrr -p 50 -M 255.255.255.0\n\
         -a -t 10.10.10.2:80 -r 192.168.200.2:80 -g -w 3\n\
         -a -t 10.10.10.2:80 -r 192.168.200.3:80 -g -w 1\n"
    );
    // HTTP_GET and TCP_CHECK run in the daemon: nothing to warn about;
    // the sorry server waits for the quorum to be lost.
    assert_eq!(r.stderr, "");
}

/// In the style of keepalived's doc/samples/keepalived.conf.sample.
const SAMPLE_STYLE: &str = r#"! Configuration File for keepalived

global_defs {
   notification_email {
     acassen@firewall.loc
     failover@firewall.loc
   }
   notification_email_from Alexandre.Cassen@firewall.loc
   smtp_server 192.168.200.1
   smtp_connect_timeout 30
   router_id LVS_DEVEL
}

vrrp_instance VI_1 {
    state MASTER
    interface eth0
    virtual_router_id 51
    priority 100
    advert_int 1
    authentication {
        auth_type PASS
        auth_pass 1111
    }
    virtual_ipaddress {
        192.168.200.16
        192.168.200.17
    }
}

virtual_server 192.168.200.100 443 {
    delay_loop 6
    lb_algo rr
    lb_kind NAT
    persistence_timeout 50
    protocol TCP

    real_server 192.168.201.100 443 {
        weight 1
        SSL_GET {
            url {
              path /
              digest ff20ad2481f97b1754ef3e12ecd3a9cc
            }
            url {
              path /mrtg/
              digest 9b3a0c85a887a256d6939da88aabd8cd
            }
            connect_timeout 3
            retry 3
            delay_before_retry 3
        }
    }
}

virtual_server 10.10.10.2 1358 {
    delay_loop 6
    lb_algo rr
    lb_kind NAT
    persistence_timeout 50
    protocol TCP

    sorry_server 192.168.200.200 1358

    real_server 192.168.200.2 1358 {
        weight 1
        HTTP_GET {
            url {
              path /testurl/test.jsp
              digest 640205b7b0fc66c1ea91c463fac6334d
            }
            connect_timeout 3
            retry 3
            delay_before_retry 3
        }
    }

    real_server 192.168.200.3 1358 {
        weight 1
        HTTP_GET {
            url {
              path /testurl/test.jsp
              digest 640205b7b0fc66c1ea91c463fac6334c
            }
            connect_timeout 3
            retry 3
            delay_before_retry 3
        }
    }
}

virtual_server 10.10.10.3 1358 {
    delay_loop 3
    lb_algo rr
    lb_kind NAT
    persistence_timeout 50
    protocol TCP

    real_server 192.168.200.4 1358 {
        weight 1
        HTTP_GET {
            url { path /testurl/test.jsp ; digest 640205b7b0fc66c1ea91c463fac6334d }
            connect_timeout 3
        }
    }

    real_server 192.168.200.5 1358 {
        weight 1
        MISC_CHECK {
            misc_path "/usr/local/bin/check.sh 192.168.200.5"
            misc_timeout 5
        }
    }
}
"#;

#[test]
fn sample_style_configuration() {
    let dir = tmpdir("ka-sample");
    let f = write(&dir, "keepalived.conf", SAMPLE_STYLE);
    let r = conv(&f);
    assert_eq!(r.code, 0, "{r:?}");
    // Sorted as ipvsadm -S sorts (192.168.200.100 before 10.x: the int
    // difference wraps), NAT by default of lb_kind NAT.
    assert_eq!(
        r.stdout,
        "-A -t 192.168.200.100:443 -s rr -p 50\n\
         -a -t 192.168.200.100:443 -r 192.168.201.100:443 -m -w 1\n\
         -A -t 10.10.10.2:1358 -s rr -p 50\n\
         -a -t 10.10.10.2:1358 -r 192.168.200.2:1358 -m -w 1\n\
         -a -t 10.10.10.2:1358 -r 192.168.200.3:1358 -m -w 1\n\
         -A -t 10.10.10.3:1358 -s rr -p 50\n\
         -a -t 10.10.10.3:1358 -r 192.168.200.4:1358 -m -w 1\n\
         -a -t 10.10.10.3:1358 -r 192.168.200.5:1358 -m -w 1\n"
    );
    let fp = f.display().to_string();
    // 1-based line of the n-th line containing `needle`.
    let line_of = |needle: &str, n: usize| {
        SAMPLE_STYLE.lines().enumerate().filter(|(_, l)| l.contains(needle)).nth(n).map(|(i, _)| i + 1).unwrap()
    };
    for (line, what) in [
        (line_of("vrrp_instance", 0), "vrrp_instance is run by keepalived (--vrrp), not lvsnic: run the daemon with --vips host, or add notify_master/notify_backup lines calling `lvsnic vip master|backup VIP...`"),
    ] {
        assert!(r.stderr.contains(&format!("{fp}:{line}: warning: {what}")), "line {line} {what}:\n{}", r.stderr);
    }
    // HTTP_GET, SSL_GET and MISC_CHECK run in the daemon: no warning.
    assert!(!r.stderr.contains("SSL_GET"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn keepalived_defaults_and_keywords() {
    let dir = tmpdir("ka-defaults");
    let f = write(
        &dir,
        "k.conf",
        "\
# keepalived 2.2.7 defaults: NAT, wlc (warned), UDP (warned), weight 1
virtual_server 10.0.0.1 80 {
    real_server 10.1.0.1 80 {
    }
    real_server 10.1.0.2 8080
    {
        weight 4
        uthreshold 100
        lthreshold 10
    }
}
virtual_server 10.0.0.2 53 {
    lvs_sched rr
    lvs_method DR
    protocol udp
    ops
    persistence_timeout
    real_server 10.1.0.3 5353 {
        weight 2
    }
    real_server 10.1.0.4 53 {
        lvs_method TUN type gue port 6080 csum
    }
    real_server 10.1.0.5 53 {
        lvs_method NAT
    }
}
virtual_server 10.0.0.3 443 {
    protocol TCP
    lb_algo sh
    sh-port
    persistence_granularity 255.255.0.0
    flag-3
    real_server 10.1.0.6 443 {
        weight 1
        alpha
        inhibit_on_failure
        TCP_CHECK {
            connect_timeout 2
        }
    }
    real_server 10.1.0.7 443 {
        alpha
        TCP_CHECK {
        }
    }
    real_server 10.1.0.8 443 {
        alpha     ! no checker: up
    }
}
virtual_server fwmark 7 {
    lb_algo mh
    mh-fallback
    lb_kind TUN
    real_server 10.1.0.9 0 {
    }
}
virtual_server 10.0.0.4 80 {
    lb_algo lc
    sorry_server 10.9.9.9 8080
    sorry_server_lvs_method NAT
}
",
    );
    let r = conv(&f);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "\
-A -t 10.0.0.3:443 -s sh -p 360 -M 255.255.0.0 -b sh-port
-a -t 10.0.0.3:443 -r 10.1.0.6:443 -m -w 0
-a -t 10.0.0.3:443 -r 10.1.0.8:443 -m -w 1
-A -u 10.0.0.1:80 -s wlc
-a -u 10.0.0.1:80 -r 10.1.0.1:80 -m -w 1
-a -u 10.0.0.1:80 -r 10.1.0.2:8080 -m -w 4
-A -u 10.0.0.2:53 -s rr -p 360 -o
-a -u 10.0.0.2:53 -r 10.1.0.3:53 -g -w 2
-a -u 10.0.0.2:53 -r 10.1.0.4:53 -i -w 1 --tun-type gue --tun-port 6080 --tun-csum
-a -u 10.0.0.2:53 -r 10.1.0.5:53 -m -w 1
-A -f 7 -s mh -b mh-fallback
-a -f 7 -r 10.1.0.9:0 -i -w 1 --tun-type ipip
"
    );
    let e = &r.stderr;
    let fp = f.display().to_string();
    for needle in [
        format!("{fp}:2: warning: virtual_server 10.0.0.1 80: no lb_algo/lvs_sched, using wlc"),
        format!("{fp}:2: warning: virtual_server 10.0.0.1 80: no protocol, using UDP (keepalived's default)"),
        format!("{fp}:58: warning: virtual_server 10.0.0.4 80 has no real servers: ignored, as keepalived does"),
        format!("{fp}:18: warning: DR server 10.1.0.3 port 5353 becomes 53"),
    ] {
        assert!(e.contains(&needle), "missing `{needle}` in:\n{e}");
    }
    // The alpha servers with a checker start down (10.1.0.6 at weight 0
    // under inhibit_on_failure, 10.1.0.7 left out) until their checker
    // succeeds in the daemon: nothing to warn about. The two services
    // without `protocol` are warned about, once each.
    assert_eq!(e.lines().count(), 5, "{e}");
    // Sorted as ipvsadm sorts: fwmark services after address services;
    // flag-3 (SCHED3) is set but ipvsadm only names sh-fallback/sh-port for sh.
}

#[test]
fn includes_relative_and_glob_with_comments() {
    let dir = tmpdir("ka-include");
    std::fs::create_dir_all(dir.join("etc/conf.d")).unwrap();
    std::fs::create_dir_all(dir.join("etc/extra")).unwrap();
    let main = write(
        &dir.join("etc"),
        "keepalived.conf",
        "global_defs { router_id X }   # comment\ninclude conf.d/*.conf\ninclude nothing/*.conf\n",
    );
    write(
        &dir.join("etc/conf.d"),
        "a.conf",
        "virtual_server 10.0.0.1 80 { ! a\n protocol TCP\n lb_algo rr\n real_server 10.1.0.1 80 { weight 2 } }\n",
    );
    write(&dir.join("etc/conf.d"), "b.conf", "include ../extra/{x,y}.conf\n");
    write(&dir.join("etc/conf.d"), "c.conf.bak", "virtual_server 10.0.0.99 80 { lb_algo rr }\n");
    write(
        &dir.join("etc/extra"),
        "x.conf",
        "virtual_server 10.0.0.2 80 {\n protocol TCP\n lb_algo rr\n real_server 10.1.0.2 80 {\n  weight 1 # one\n }\n}\n",
    );
    write(
        &dir.join("etc/extra"),
        "y.conf",
        "virtual_server 10.0.0.3 80 { protocol TCP\n lb_algo \"wrr\"\n  real_server 10.1.0.3 80 { } }\n",
    );
    // Run from elsewhere: includes are relative to the including file.
    let o = Command::new(LVSNIC)
        .current_dir(std::env::temp_dir())
        .args(["keepalived", main.to_str().unwrap()])
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{err}");
    assert_eq!(
        out,
        "-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.1.0.1:80 -m -w 2\n\
         -A -t 10.0.0.2:80 -s rr\n-a -t 10.0.0.2:80 -r 10.1.0.2:80 -m -w 1\n\
         -A -t 10.0.0.3:80 -s wrr\n-a -t 10.0.0.3:80 -r 10.1.0.3:80 -m -w 1\n"
    );
    assert_eq!(err.trim_end(), format!("{}:3: warning: no config files matched 'nothing/*.conf'", main.display()));
}

#[test]
fn syntax_errors_and_unknown_keywords_with_line_numbers() {
    let dir = tmpdir("ka-errors");
    let unbalanced = write(
        &dir,
        "open.conf",
        "virtual_server 10.0.0.1 80 {\n  lb_algo rr\n  real_server 10.1.0.1 80 {\n    weight 1\n}\n",
    );
    let r = conv(&unbalanced);
    assert_eq!((r.code, r.stdout.as_str()), (1, ""));
    assert!(
        r.stderr.contains(&format!("{}:1: error: missing '}}' for the block opened here", unbalanced.display())),
        "{}",
        r.stderr
    );

    let extra = write(&dir, "extra.conf", "virtual_server 10.0.0.1 80 {\n  lb_algo rr\n}\n}\n");
    let r = conv(&extra);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains(&format!("{}:4: error: extra '}}' found", extra.display())), "{}", r.stderr);

    let missing = write(
        &dir,
        "missing.conf",
        "virtual_server 10.0.0.1 80 {\n  lb_algo\n  frobnicate 3\n  real_server 10.1.0.1 80 {\n    weight\n    colour blue\n  }\n  real_server 10.1.0.2 80 {\n    weight 70000\n  }\n}\nvirtual_server 10.0.0.2 {\n  lb_algo rr\n}\nbogus_top {\n}\n",
    );
    let r = conv(&missing);
    assert_eq!((r.code, r.stdout.as_str()), (1, ""));
    let p = missing.display().to_string();
    for needle in [
        format!("{p}:2: error: lb_algo: missing value"),
        format!("{p}:3: warning: unknown keyword 'frobnicate' in virtual_server 10.0.0.1 80"),
        format!("{p}:5: error: weight: missing value"),
        format!("{p}:6: warning: unknown keyword 'colour' in real_server 10.1.0.1 80"),
        format!("{p}:9: error: weight: invalid value '70000' (expected 0..65535)"),
        format!("{p}:12: error: Zero port specified for non-persistent service"),
        format!("{p}:15: warning: unknown keyword 'bogus_top'"),
    ] {
        assert!(r.stderr.contains(&needle), "missing `{needle}` in:\n{}", r.stderr);
    }
    assert!(r.stderr.ends_with("4 error(s), no rules produced\n"), "{}", r.stderr);

    let quote = write(&dir, "quote.conf", "virtual_server 10.0.0.1 80 {\n  lb_algo \"rr\n}\n");
    let r = conv(&quote);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains(&format!("{}:2: error: unterminated quote", quote.display())), "{}", r.stderr);

    let r = keepalived(&[dir.join("nope.conf").to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("cannot read"), "{}", r.stderr);
}

#[test]
fn load_into_the_daemon() {
    let dir = tmpdir("ka-load");
    let conf = write(
        &dir,
        "keepalived.conf",
        "\
virtual_server 10.0.0.100 80 {
    protocol TCP
    lb_algo wlc
    lb_kind NAT
    real_server 192.168.10.1 80 {
        weight 2
        uthreshold 300
        lthreshold 200
        ! The first failure is retried after 60 s: up for this test's span.
        TCP_CHECK { connect_timeout 3
                    delay_before_retry 60 }
    }
    real_server 192.168.10.2 80 {
        weight 1
    }
}
virtual_server 10.0.0.101 53 {
    lb_algo rr
    lb_kind DR
    protocol UDP
    persistence_timeout 120
    real_server 192.168.10.3 53 {
    }
}
",
    );
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &[]);
    let printed = conv(&conf);
    assert_eq!(printed.code, 0);
    let r = keepalived(&[conf.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{r:?}");
    assert!(r.stderr.contains("keepalived: 1 health checker(s) running in the daemon"), "{}", r.stderr);
    // What the daemon now saves is what the converter printed.
    assert_eq!(d.run(&["-S", "-n"]).stdout, printed.stdout);
    // Thresholds, which -S does not show, were loaded.
    let th = d.run(&["-L", "-n", "--thresholds", "-t", "10.0.0.100:80"]).stdout;
    assert!(th.contains(&format!("  -> {:<28} {:<10} {:<10} ", "192.168.10.1:80", 300, 200)), "{th}");
    // Loading twice is a reload with nothing to change (issue 19).
    let r = keepalived(&[conf.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("keepalived: 0 rule change(s) applied"), "{}", r.stderr);
    assert_eq!(d.run(&["-S", "-n"]).stdout, printed.stdout);
}

#[test]
fn virtual_server_groups() {
    let dir = tmpdir("ka-group");
    let f = write(
        &dir,
        "k.conf",
        "virtual_server group WEB {\n  protocol TCP\n  lb_algo rr\n  lb_kind DR\n  real_server 10.1.0.1 80 { weight 2 }\n}\n\
         virtual_server_group WEB {\n  10.0.0.10-11 80\n  10.0.0.20 80\n}\n\
         virtual_server group NOPE {\n  lb_algo rr\n}\n",
    );
    let r = conv(&f);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains(&format!("{}:11: error: virtual_server group NOPE: no such virtual_server_group", f.display())),
        "{}",
        r.stderr
    );
    let f = write(
        &dir,
        "ok.conf",
        &std::fs::read_to_string(&f).unwrap().replace("virtual_server group NOPE {\n  lb_algo rr\n}\n", ""),
    );
    let r = conv(&f);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "-A -t 10.0.0.10:80 -s rr\n-a -t 10.0.0.10:80 -r 10.1.0.1:80 -g -w 2\n\
         -A -t 10.0.0.11:80 -s rr\n-a -t 10.0.0.11:80 -r 10.1.0.1:80 -g -w 2\n\
         -A -t 10.0.0.20:80 -s rr\n-a -t 10.0.0.20:80 -r 10.1.0.1:80 -g -w 2\n"
    );
}

/// keepalived 2.2.7's ranges (check_data.c, lib/utils.c `inet_stor`): an
/// IPv6 range names the last 16-bit group's end in hex; a whole end
/// address also works (IPv4: every address up to it; IPv6: the last group
/// steps), and so does a prefix (`/MASK`, host bits zero); the end must be
/// past the start.
#[test]
fn virtual_server_group_ranges_ipv4_and_ipv6() {
    let dir = tmpdir("ka-ranges");
    let conf = |group: &str, rs: &str| {
        format!(
            "virtual_server group G {{\n  protocol TCP\n  lb_algo rr\n  lb_kind DR\n  real_server {rs} 80 {{ weight 2 }}\n}}\n\
             virtual_server_group G {{\n  {group} 80\n}}\n"
        )
    };
    let services = |r: &str| -> Vec<String> {
        r.lines().filter(|l| l.starts_with("-A ")).map(|l| l.split(' ').nth(2).unwrap().to_string()).collect()
    };
    // "9-b" is hex: 9, a, b.
    let r = conv(&write(&dir, "v6.conf", &conf("2001:db8::9-b", "2001:db8:1::1")));
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.stdout,
        "-A -t [2001:db8::9]:80 -s rr\n-a -t [2001:db8::9]:80 -r [2001:db8:1::1]:80 -g -w 2\n\
         -A -t [2001:db8::a]:80 -s rr\n-a -t [2001:db8::a]:80 -r [2001:db8:1::1]:80 -g -w 2\n\
         -A -t [2001:db8::b]:80 -s rr\n-a -t [2001:db8::b]:80 -r [2001:db8:1::1]:80 -g -w 2\n"
    );
    let r = conv(&write(&dir, "v6full.conf", &conf("2001:db8::1:fffe-2001:db8::1:ffff", "2001:db8:1::1")));
    assert_eq!(services(&r.stdout), ["[2001:db8::1:fffe]:80", "[2001:db8::1:ffff]:80"], "{r:?}");
    let r = conv(&write(&dir, "v4full.conf", &conf("10.0.0.254-10.0.1.1", "10.1.0.1")));
    assert_eq!(services(&r.stdout), ["10.0.0.254:80", "10.0.0.255:80", "10.0.1.0:80", "10.0.1.1:80"], "{r:?}");
    // A prefix: every address in it (host bits zero).
    let r = conv(&write(&dir, "v6mask.conf", &conf("2001:db8::1:100/126", "2001:db8:1::1")));
    let want = ["[2001:db8::1:100]:80", "[2001:db8::1:101]:80", "[2001:db8::1:102]:80", "[2001:db8::1:103]:80"];
    assert_eq!(services(&r.stdout), want, "{r:?}");
    let r = conv(&write(&dir, "v4mask.conf", &conf("10.0.0.8/30", "10.1.0.1")));
    assert_eq!(services(&r.stdout), ["10.0.0.8:80", "10.0.0.9:80", "10.0.0.10:80", "10.0.0.11:80"], "{r:?}");
    let r = conv(&write(&dir, "v4host.conf", &conf("10.0.0.8/32", "10.1.0.1")));
    assert_eq!(services(&r.stdout), ["10.0.0.8:80"], "{r:?}");
    for (group, rs, why) in [
        ("2001:db8::5-5", "2001:db8:1::1", "address range end is not greater than its start in"),
        ("2001:db8::5-10000", "2001:db8:1::1", "address range end too large in"),
        ("2001:db8::5-xyz", "2001:db8:1::1", "invalid address range"),
        ("2001:db8::5-2001:db8::4", "2001:db8:1::1", "address range end is less than its start in"),
        ("10.0.0.5-5", "10.1.0.1", "address range end is not greater than its start in"),
        ("10.0.0.5-256", "10.1.0.1", "address range end too large in"),
        ("10.0.0.9/30", "10.1.0.1", "address mask bits not empty in"),
        ("10.0.0.8/0", "10.1.0.1", "invalid netmask in"),
        ("2001:db8::1/120", "2001:db8:1::1", "address mask bits not empty in"),
        ("2001:db8::/129", "2001:db8:1::1", "invalid netmask in"),
    ] {
        let f = write(&dir, "bad.conf", &conf(group, rs));
        let r = conv(&f);
        assert_eq!(r.code, 1, "{group}: {r:?}");
        assert!(r.stderr.contains(&format!("{}:8: error: virtual_server_group G: {why} '{group}'", f.display())), "{group}: {}", r.stderr);
    }
}

#[test]
fn checker_configuration_defaults_and_inheritance() {
    use lvsnic::health::config::{CheckKind, UrlCheck};
    use std::time::Duration;
    let dir = tmpdir("ka-checkers");
    let f = write(
        &dir,
        "k.conf",
        "\
virtual_server 10.0.0.1 80 {
    lb_algo rr
    delay_loop 0.5
    retry 4
    quorum 3
    hysteresis 1
    sorry_server 10.1.0.9 80
    real_server 10.1.0.1 8080 {
        delay_before_retry 2
        inhibit_on_failure
        TCP_CHECK {
            bindto 10.0.0.1
        }
        HTTP_GET {
            url {
                path /a
                status_code 200-204 301
            }
            url {
                path /b
                digest 900150983CD24FB0D6963F7D28E17F72
            }
            connect_ip 127.0.0.1
            connect_port 81
            connect_timeout 1.5
            nb_get_retry 2
            virtualhost example.org
        }
    }
    real_server 10.1.0.2 80 {
        weight 2
        MISC_CHECK {
            misc_path \"/bin/check -x 10.1.0.2\"
            misc_dynamic
            alpha
        }
    }
    real_server 10.1.0.3 80 {
        SSL_GET {
            url {
                path /
                status_code 200
            }
            connect_port 8443
            virtualhost www.example.org
            enable_sni
            warmup 2
        }
    }
}
",
    );
    let imp = lvsnic::keepalived::import(&f).unwrap();
    let fp = f.display();
    let w: Vec<String> = imp.warnings.iter().map(|d| format!("{}: {}", d.loc, d.msg)).collect();
    assert_eq!(
        w,
        [format!("{fp}:1: virtual_server 10.0.0.1 80: no protocol, using UDP (keepalived's default)")]
    );
    assert_eq!(imp.health.services.len(), 1);
    let v = &imp.health.services[0];
    // No `protocol` line: keepalived 2.2.7 makes it a UDP service.
    assert_eq!(v.service, ["-u", "10.0.0.1:80"]);
    assert_eq!((v.quorum, v.hysteresis), (3, 1));
    let sorry = v.sorry.as_ref().unwrap();
    assert_eq!(sorry.dest, ["-r", "10.1.0.9:80", "-m"]);
    assert_eq!((sorry.weight, sorry.inhibit), (1, false));
    let [r1, r2, r3] = &v.reals[..] else { panic!("{:?}", v.reals) };
    assert_eq!(r1.dest.dest, ["-r", "10.1.0.1:8080", "-m"]);
    assert_eq!((r1.dest.weight, r1.dest.inhibit), (1, true));
    // TCP_CHECK: the real server's address, keepalived's defaults, the
    // virtual server's delay_loop and retry, the real server's delay_before_retry.
    let t = &r1.checkers[0];
    let CheckKind::Tcp(tt) = &t.kind else { panic!("{t:?}") };
    assert_eq!((tt.addr, tt.timeout), ("10.1.0.1:8080".parse().unwrap(), Duration::from_secs(5)));
    // `bindto` without `bind_port`: the address, any port.
    assert_eq!((tt.bind, tt.bind_if.as_deref()), (Some("10.0.0.1:0".parse().unwrap()), None));
    assert_eq!((t.delay_loop, t.retry, t.delay_before_retry, t.alpha), (Duration::from_millis(500), 4, Duration::from_secs(2), false));
    assert_eq!(t.origin, format!("{fp}:11"));
    // HTTP_GET: its own target, timeout and retry.
    let h = &r1.checkers[1];
    let CheckKind::Http { target, urls, virtualhost } = &h.kind else { panic!("{h:?}") };
    assert_eq!((target.addr, target.timeout), ("127.0.0.1:81".parse().unwrap(), Duration::from_millis(1500)));
    assert_eq!(virtualhost.as_deref(), Some("example.org"));
    assert_eq!(
        urls,
        &[
            UrlCheck { path: "/a".into(), status: vec![(200, 204), (301, 301)], digest: None },
            UrlCheck { path: "/b".into(), status: vec![], digest: Some("900150983cd24fb0d6963f7d28e17f72".into()) },
        ]
    );
    assert_eq!(h.retry, 2);
    // MISC_CHECK: its words, misc_timeout defaulting to delay_loop, alpha;
    // retry from the virtual server (MISC_CHECK's own default is 0).
    let m = &r2.checkers[0];
    let CheckKind::Misc { argv, timeout, dynamic, .. } = &m.kind else { panic!("{m:?}") };
    assert_eq!(argv, &["/bin/check", "-x", "10.1.0.2"]);
    assert_eq!((*timeout, *dynamic), (Duration::from_millis(500), true));
    assert!(m.alpha);
    assert_eq!(m.retry, 4);
    // SSL_GET: HTTP_GET's keywords, and enable_sni.
    let [sg] = &r3.checkers[..] else { panic!("{:?}", r3.checkers) };
    let CheckKind::Ssl { target, urls, virtualhost, enable_sni, client_cert } = &sg.kind else { panic!("{sg:?}") };
    assert_eq!((target.addr, target.timeout), ("10.1.0.3:8443".parse().unwrap(), Duration::from_secs(5)));
    assert_eq!(urls, &[UrlCheck { path: "/".into(), status: vec![(200, 200)], digest: None }]);
    assert_eq!((virtualhost.as_deref(), *enable_sni, client_cert), (Some("www.example.org"), true, &None));
    assert_eq!((sg.retry, sg.warmup, sg.delay_loop), (4, Duration::from_secs(2), Duration::from_millis(500)));
    assert_eq!(sg.origin, format!("{fp}:39"));
    assert_eq!(sg.kind.what(), "10.1.0.3:8443 / sni www.example.org");
    // At start: 10.1.0.2 is down (alpha): live weight 1 + 1 < quorum 3 + 1,
    // so the sorry server serves alone, 10.1.0.1 at weight 0 (inhibit).
    assert_eq!(
        lvsnic_model::rules::ipvsadm::format_save(&imp.rules),
        "-A -u 10.0.0.1:80 -s rr\n-a -u 10.0.0.1:80 -r 10.1.0.1:8080 -m -w 0\n-a -u 10.0.0.1:80 -r 10.1.0.9:80 -m -w 1\n"
    );
}

/// VRRP stays keepalived's: an instance whose notify lines call
/// `lvsnic vip` loads without a warning; one that does not is told how.
#[test]
fn vrrp_instance_with_lvsnic_vip_notify_is_not_warned_about() {
    let dir = tmpdir("ka-vrrp");
    let vs = "virtual_server 10.0.0.100 80 {\n    protocol TCP\n    lb_algo rr\n    real_server 192.168.10.1 80 {\n    }\n}\n";
    let with = write(
        &dir,
        "with.conf",
        &format!(
            "vrrp_instance VI_1 {{\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    virtual_ipaddress {{\n        10.0.0.100\n    }}\n    notify_master \"/usr/sbin/lvsnic vip master 10.0.0.100\"\n    notify_backup \"/usr/sbin/lvsnic vip backup 10.0.0.100\"\n}}\n{vs}"
        ),
    );
    let imp = lvsnic::keepalived::import(&with).unwrap();
    assert!(imp.warnings.is_empty(), "{:?}", imp.warnings.iter().map(|d| d.msg.clone()).collect::<Vec<_>>());
    let without = write(
        &dir,
        "without.conf",
        &format!("vrrp_instance VI_1 {{\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n}}\n{vs}"),
    );
    let imp = lvsnic::keepalived::import(&without).unwrap();
    let w: Vec<String> = imp.warnings.iter().map(|d| format!("{}: {}", d.loc, d.msg)).collect();
    assert_eq!(
        w,
        [format!(
            "{}:1: vrrp_instance is run by keepalived (--vrrp), not lvsnic: run the daemon with --vips host, or add notify_master/notify_backup lines calling `lvsnic vip master|backup VIP...` (docs/ha.md)",
            without.display()
        )]
    );
    assert_eq!(
        lvsnic_model::rules::ipvsadm::format_save(&imp.rules),
        "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n"
    );
}

/// The usual notify line runs a script of the operator's (logging, other
/// services): it counts when the script calls `lvsnic vip`; a script that
/// does not is warned about like no notify line.
#[test]
fn vrrp_instance_whose_notify_script_calls_lvsnic_vip_is_not_warned_about() {
    let dir = tmpdir("ka-vrrp-script");
    let calls = write(&dir, "notify.sh", "#!/bin/sh\nlogger \"VRRP $1\"\nexec /usr/sbin/lvsnic vip \"$1\" 10.0.0.100\n");
    let other = write(&dir, "other.sh", "#!/bin/sh\nlogger \"VRRP $1\"\n");
    let conf = |script: &Path, generic: bool| {
        let notify = if generic {
            format!("    notify \"{}\"\n", script.display())
        } else {
            format!("    notify_master \"{} master\"\n    notify_backup \"{} backup\"\n", script.display(), script.display())
        };
        format!(
            "vrrp_instance VI_1 {{\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n{notify}}}\nvirtual_server 10.0.0.100 80 {{\n    protocol TCP\n    real_server 192.168.10.1 80 {{\n    }}\n}}\n"
        )
    };
    let msgs = |name: &str, text: String| -> Vec<String> {
        let f = write(&dir, name, &text);
        lvsnic::keepalived::import(&f).unwrap().warnings.iter().map(|d| format!("{}: {}", d.loc.line, d.msg)).collect()
    };
    let warned = "1: vrrp_instance is run by keepalived (--vrrp), not lvsnic: run the daemon with --vips host, or add notify_master/notify_backup lines calling `lvsnic vip master|backup VIP...` (docs/ha.md)";
    // The missing scheduler is warned about in every case (keepalived's default wlc).
    let wlc = |w: &[String]| w.iter().filter(|m| !m.contains("lb_algo")).cloned().collect::<Vec<_>>();
    assert_eq!(wlc(&msgs("a.conf", conf(&calls, false))), Vec::<String>::new());
    assert_eq!(wlc(&msgs("b.conf", conf(&calls, true))), Vec::<String>::new());
    assert_eq!(wlc(&msgs("c.conf", conf(&other, false))), [warned]);
    assert_eq!(wlc(&msgs("d.conf", conf(&dir.join("missing.sh"), false))), [warned]);
}

/// The top-level `SSL` block: `certificate` and `key` become every
/// SSL_GET's client certificate (read at import, wherever the block is);
/// `ca` and `password` are warned about with their lines.
#[test]
fn ssl_block_client_certificate_and_warnings() {
    use lvsnic::health::config::{CheckKind, ClientCert};
    let dir = tmpdir("ka-ssl-block");
    let ck = rcgen::generate_simple_self_signed(vec!["client.invalid".to_string()]).unwrap();
    let cert = write(&dir, "client.pem", &ck.cert.pem());
    let key = write(&dir, "client.key", &ck.key_pair.serialize_pem());
    let conf = |ssl: &str| {
        format!(
            "\
SSL {{
{ssl}
}}
virtual_server 10.0.0.1 443 {{
    protocol TCP
    lb_algo rr
    real_server 10.1.0.1 443 {{
        SSL_GET {{
            url {{
                path /
            }}
        }}
    }}
}}
"
        )
    };
    let f = write(
        &dir,
        "k.conf",
        &conf(&format!("    password secret\n    ca /etc/ssl/ca.pem\n    certificate {}\n    key {}", cert.display(), key.display())),
    );
    let imp = lvsnic::keepalived::import(&f).unwrap();
    let fp = f.display();
    let w: Vec<String> = imp.warnings.iter().map(|d| format!("{}: {}", d.loc, d.msg)).collect();
    assert_eq!(
        w,
        [
            format!("{fp}:3: SSL ca: not used: keepalived 2.2.7 loads it but never verifies the server certificate (SSL_VERIFY_NONE), and neither does lvsnic"),
            format!("{fp}:2: SSL password is not supported by lvsnic (encrypted keys are not read): ignored"),
        ]
    );
    let c = &imp.health.services[0].reals[0].checkers[0];
    let CheckKind::Ssl { client_cert, .. } = &c.kind else { panic!("{c:?}") };
    let want = ClientCert { certificate: cert.canonicalize().unwrap(), key: key.canonicalize().unwrap() };
    assert_eq!(client_cert.as_ref(), Some(&want));

    // A certificate without its key is not used (warned); an unreadable
    // or invalid file is an error, as keepalived does not start then.
    let f = write(&dir, "k2.conf", &conf(&format!("    certificate {}", cert.display())));
    let imp = lvsnic::keepalived::import(&f).unwrap();
    let c = &imp.health.services[0].reals[0].checkers[0];
    assert!(matches!(&c.kind, CheckKind::Ssl { client_cert: None, .. }), "{c:?}");
    assert_eq!(imp.warnings[0].msg, "SSL: certificate and key go together: the client certificate is not used");
    assert_eq!(imp.warnings[0].loc.line, 2);
    let f = write(&dir, "k3.conf", &conf(&format!("    certificate {}\n    key {}/missing.key", cert.display(), dir.display())));
    let e = lvsnic::keepalived::import(&f).unwrap_err();
    assert_eq!(e.errors.len(), 1, "{:?}", e.errors);
    assert_eq!(e.errors[0].loc.line, 3);
    assert!(e.errors[0].msg.starts_with("SSL: can't read "), "{:?}", e.errors);
    let f = write(&dir, "k4.conf", &conf(&format!("    certificate {}\n    key {}", key.display(), key.display())));
    let e = lvsnic::keepalived::import(&f).unwrap_err();
    assert_eq!(e.errors[0].loc.line, 2, "{:?}", e.errors);
    assert!(e.errors[0].msg.contains("no certificate"), "{:?}", e.errors);
}

const VI_1: &str = "vrrp_instance VI_1 {\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    virtual_ipaddress {\n        10.0.0.100\n    }\n    notify_master \"/usr/sbin/lvsnic vip master 10.0.0.100\"\n}\n";

/// Imports `global_defs { LINES }` followed by [`VI_1`]: the sync daemons
/// asked for and the warnings as `LINE: MESSAGE`.
fn sync_import(name: &str, lines: &str) -> (Option<lvsnic::keepalived::SyncDaemonsConfig>, Vec<String>) {
    // A directory per file: the tests that call this run in parallel.
    let dir = tmpdir(&format!("ka-syncd-{name}"));
    let f = write(&dir, name, &format!("global_defs {{\n{lines}}}\n{VI_1}"));
    let imp = lvsnic::keepalived::import(&f).unwrap_or_else(|e| panic!("{:?}", e.errors));
    let w = imp.warnings.iter().map(|d| format!("{}: {}", d.loc.line, d.msg)).collect();
    (imp.sync, w)
}

/// `lvs_sync_daemon` as keepalived 2.2.7 reads it (global_parser.c
/// `lvs_syncd_handler`, vrrp.c `vrrp_complete_init`): the sync id
/// defaults to the VRRP instance's virtual_router_id, or 0 without one.
#[test]
fn lvs_sync_daemon_defaults_and_options() {
    let (s, w) = sync_import("a.conf", "    router_id LVS_A\n    lvs_sync_daemon eth0 VI_1\n");
    assert_eq!(w, Vec::<String>::new());
    let s = s.expect("sync daemons");
    assert_eq!((s.loc.line, s.ifname.as_str(), s.syncid, s.vrrp_instance.as_deref()), (3, "eth0", 51, Some("VI_1")));
    assert_eq!((s.maxlen, s.port, s.ttl, s.group), (None, None, None, None));

    // Without an instance: keepalived's checker runs both roles, id 0.
    let (s, w) = sync_import("b.conf", "    lvs_sync_daemon eth0\n");
    assert_eq!(w, Vec::<String>::new());
    let s = s.unwrap();
    assert_eq!((s.syncid, s.vrrp_instance), (0, None));

    // Every option, `inst` spelled out, in any order.
    let (s, w) = sync_import("c.conf", "    lvs_sync_daemon eth1 id 7 inst VI_1 maxlen 1400 port 8900 ttl 3 group 239.1.2.3\n");
    assert_eq!(w, Vec::<String>::new());
    let s = s.unwrap();
    assert_eq!((s.ifname.as_str(), s.syncid, s.vrrp_instance.as_deref()), ("eth1", 7, Some("VI_1")));
    assert_eq!((s.maxlen, s.port, s.ttl), (Some(1400), Some(8900), Some(3)));
    assert_eq!(s.group, Some("239.1.2.3".parse().unwrap()));
    let (s, _) = sync_import("c6.conf", "    lvs_sync_daemon eth1 group ff02::81 id 0\n");
    assert_eq!((s.as_ref().unwrap().group, s.unwrap().syncid), (Some("ff02::81".parse().unwrap()), 0));

    // The old syntax: a bare sync id after the instance (keepalived asks for `id`).
    let (s, w) = sync_import("d.conf", "    lvs_sync_daemon eth0 VI_1 9\n");
    assert_eq!(s.unwrap().syncid, 9);
    assert_eq!(w, ["2: Please use keyword \"id\" before lvs_sync_daemon SYNCID"]);
}

/// keepalived reports bad values as configuration errors and goes on
/// without them (the default instead); lvsnic warns with its words and
/// the line, and the rest of the file loads.
#[test]
fn lvs_sync_daemon_bad_values_are_warnings_with_line_numbers() {
    let (s, w) = sync_import(
        "bad.conf",
        "    lvs_sync_daemon eth0 VI_1 id 300 maxlen 0 port 65536 ttl 0 group 10.1.1.1 frob\n",
    );
    let s = s.unwrap();
    assert_eq!((s.syncid, s.maxlen, s.port, s.ttl, s.group), (51, None, None, None, None));
    assert_eq!(
        w,
        [
            "2: lvs_sync_daemon: number '300' outside range [0, 255]",
            "2: Invalid syncid (300) - defaulting to vrid",
            "2: lvs_sync_daemon: number '0' outside range [1, 65507]",
            "2: Invalid lvs_sync_daemon maxlen (0) - ignoring",
            "2: lvs_sync_daemon: number '65536' outside range [1, 65535]",
            "2: Invalid lvs_sync_daemon port (65536) - ignoring",
            "2: lvs_sync_daemon: number '0' outside range [1, 255]",
            "2: Invalid lvs_sync_daemon ttl (0) - ignoring",
            "2: lvs_sync_daemon group address 10.1.1.1 is not multicast - ignoring",
            "2: Unknown option frob specified for lvs_sync_daemon",
        ]
    );
    let (s, w) = sync_import("bad2.conf", "    lvs_sync_daemon eth0 VI_1 group abc id x ttl\n");
    assert_eq!(s.unwrap().syncid, 51);
    assert_eq!(
        w,
        [
            "2: Invalid lvs_sync_daemon group (abc) - ignoring",
            "2: lvs_sync_daemon: invalid number 'x'",
            "2: Invalid syncid (x) - defaulting to vrid",
            "2: No value specified for lvs_sync_daemon ttl - ignoring",
        ]
    );
    // The whole line ignored: no interface, a name too long, a second line.
    let (s, w) = sync_import("none.conf", "    lvs_sync_daemon\n");
    assert_eq!((s, w), (None, vec!["2: lvs_sync_daemon requires interface".to_string()]));
    let (s, w) = sync_import("long.conf", "    lvs_sync_daemon verylonginterface VI_1\n");
    assert_eq!((s, w), (None, vec!["2: lvs_sync_daemon interface name 'verylonginterface' too long - ignoring".to_string()]));
    let (s, w) = sync_import("twice.conf", "    lvs_sync_daemon eth0 VI_1\n    lvs_sync_daemon eth1 VI_1 id 3\n");
    assert_eq!((s.unwrap().ifname.as_str(), w), ("eth0", vec!["3: lvs_sync_daemon has already been specified as eth0 VI_1 - ignoring".to_string()]));
    // An instance that does not exist clears the line (vrrp_complete_init).
    let (s, w) = sync_import("noinst.conf", "    lvs_sync_daemon eth0 VI_9 id 4\n");
    assert_eq!(s, None);
    assert_eq!(w, ["2: Unable to find vrrp instance VI_9 for lvs_syncd - clearing lvs_syncd config (no sync daemon started)"]);
}

/// `--load` with an interface the machine does not have: the daemon's
/// "No such device", with the file and line (no root needed: the
/// interface is looked up before any socket).
#[test]
fn load_lvs_sync_daemon_on_an_unknown_interface_fails_with_the_line() {
    let dir = tmpdir("ka-syncd-nodev");
    let conf = write(&dir, "keepalived.conf", &format!("global_defs {{\n    lvs_sync_daemon nosuchif0 VI_1\n}}\n{VI_1}"));
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &[]);
    let r = keepalived(&[conf.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 255, "{r:?}");
    assert!(
        r.stderr.contains(&format!("{}:2: error: lvs_sync_daemon nosuchif0: master sync daemon: No such device", conf.display())),
        "{}",
        r.stderr
    );
    assert_eq!(d.run(&["-L", "--daemon"]).stdout, "");
}

/// `--load` of a file with `lvs_sync_daemon` starts both sync daemons, as
/// `-L --daemon` shows them (ipvsadm's format); loading it again keeps them;
/// a changed line replaces them. Needs root (the backup binds its socket to
/// the interface, SO_BINDTODEVICE): run by scripts/test.sh as root.
#[test]
#[ignore = "needs root (the backup's SO_BINDTODEVICE on lo; scripts/test.sh runs it as root)"]
fn load_starts_both_sync_daemons() {
    let dir = tmpdir("ka-syncd-load");
    let port = 20000 + std::process::id() % 20000;
    let text = |id: &str| format!("global_defs {{\n    lvs_sync_daemon lo VI_1 {id}port {port}\n}}\n{VI_1}");
    let conf = write(&dir, "keepalived.conf", &text(""));
    let d = Daemon::start(&dir, &lvsnic_fixtures::director_toml(), &[]);
    let r = keepalived(&[conf.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{r:?}");
    assert!(r.stderr.contains("keepalived: master sync daemon started, backup sync daemon started (mcast=lo, syncid=51;"), "{}", r.stderr);
    let listing = |syncid: u32| {
        format!(
            "master sync daemon (mcast=lo, syncid={syncid}, maxlen=1472, group=224.0.0.81, port={port}, ttl=1)\n\
             backup sync daemon (mcast=lo, syncid={syncid}, maxlen=65507, group=224.0.0.81, port={port}, ttl=1)\n"
        )
    };
    assert_eq!(d.run(&["-L", "--daemon"]).stdout, listing(51));
    // Again: the same settings, the daemons are kept (not "Daemon has already run").
    let r = keepalived(&[conf.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("keepalived: master sync daemon kept, backup sync daemon kept"), "{}", r.stderr);
    assert_eq!(d.run(&["-L", "--daemon"]).stdout, listing(51));
    // Another sync id: both replaced.
    write(&dir, "keepalived.conf", &text("id 9 "));
    let r = keepalived(&[conf.to_str().unwrap(), "--load", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("keepalived: master sync daemon replaced, backup sync daemon replaced (mcast=lo, syncid=9;"), "{}", r.stderr);
    assert_eq!(d.run(&["-L", "--daemon"]).stdout, listing(9));
}

/// keepalived's check_conn_opts: a checker whose target is a link-local
/// IPv6 address needs `bind_if`; without it keepalived reports the error
/// and drops the checker (the server is then up without checks).
#[test]
fn link_local_ipv6_checker_needs_bind_if() {
    use lvsnic::health::config::CheckKind;
    let dir = tmpdir("ka-linklocal");
    let f = write(
        &dir,
        "k.conf",
        "virtual_server 2001:db8::10 80 {\n    protocol TCP\n    lb_algo rr\n\
         \x20   real_server fe80::1 80 {\n        TCP_CHECK {\n        }\n    }\n\
         \x20   real_server fe80::2 80 {\n        HTTP_GET {\n            url {\n                path /\n            }\n            bind_if eth0\n        }\n    }\n}\n",
    );
    let imp = lvsnic::keepalived::import(&f).unwrap();
    let w: Vec<String> = imp.warnings.iter().map(|d| format!("{}: {}", d.loc, d.msg)).collect();
    assert_eq!(
        w,
        [format!("{}:5: Checker link local address fe80::1 requires a bind_if: TCP_CHECK of real server fe80::1 80 dropped", f.display())]
    );
    let reals = &imp.health.services[0].reals;
    let r1 = reals.iter().find(|r| r.dest.dest[1] == "[fe80::1]:80").expect("fe80::1 kept");
    assert!(r1.checkers.is_empty(), "{r1:?}");
    let r2 = reals.iter().find(|r| r.dest.dest[1] == "[fe80::2]:80").expect("fe80::2 checked");
    let CheckKind::Http { target, .. } = &r2.checkers[0].kind else { panic!("{:?}", r2.checkers) };
    assert_eq!((target.addr, target.bind_if.as_deref()), ("[fe80::2]:80".parse().unwrap(), Some("eth0")));
}
