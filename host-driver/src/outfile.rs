//! Output files that never destroy anything: written under a temporary
//! name in the same directory, synced and renamed over the target only
//! when the writer commits ([`AtomicFile`]); and a check, before anything
//! is written, that no output names an input or another output
//! ([`refuse_overlaps`]).
//!
//! A target that exists and is not a regular file (`/dev/null`, a FIFO, a
//! terminal) is written in place: there is nothing to replace atomically,
//! and renaming over a device node would remove it.

use lvsnic_model::pcap::{self, PcapRecord, PcapWriter, Resolution};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary names of files created by one process.
static SERIAL: AtomicU64 = AtomicU64::new(0);

/// An output file written under a temporary name and renamed over its
/// target by [`commit`](AtomicFile::commit); dropped without a commit, the
/// temporary file is removed and the target is left as it was.
#[derive(Debug)]
pub struct AtomicFile {
    /// The path the user named (for messages).
    path: PathBuf,
    /// Where the file goes on commit (the target of a symbolic link).
    target: PathBuf,
    /// The temporary file (`None`: the target is written in place).
    tmp: Option<PathBuf>,
    file: Option<File>,
}

/// `PATH: what went wrong` as one line.
fn err(path: &Path, what: impl std::fmt::Display) -> String {
    format!("{}: {what}", path.display())
}

impl AtomicFile {
    /// Creates the temporary file beside `path` (the target is not touched
    /// yet). Fails when `path` is a directory, its directory does not exist
    /// or cannot be written. The error is one line naming `path`.
    pub fn create(path: &Path) -> Result<AtomicFile, String> {
        let meta = std::fs::metadata(path).ok();
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(err(path, "is a directory"));
        }
        if meta.as_ref().is_some_and(|m| !m.is_file()) {
            // A device or a FIFO: written in place.
            let file = OpenOptions::new().write(true).open(path).map_err(|e| err(path, e))?;
            return Ok(AtomicFile { path: path.into(), target: path.into(), tmp: None, file: Some(file) });
        }
        // A symbolic link to a file is replaced at its target.
        let target = if meta.is_some() { std::fs::canonicalize(path).map_err(|e| err(path, e))? } else { path.to_path_buf() };
        let name = target.file_name().ok_or_else(|| err(path, "not a file name"))?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.{}.tmp", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed)));
        let tmp = dir.join(tmp_name);
        let file = OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| err(path, e))?;
        Ok(AtomicFile { path: path.into(), target, tmp: Some(tmp), file: Some(file) })
    }

    /// The path the file was created for.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `data` at the end of the file; the error names the path.
    pub fn write_all_named(&mut self, data: &[u8]) -> Result<(), String> {
        self.write_all(data).map_err(|e| err(&self.path, e))
    }

    /// Syncs the file to disk and renames it over the target (then syncs
    /// the directory). On an error the temporary file is removed and the
    /// target is unchanged.
    pub fn commit(mut self) -> Result<(), String> {
        let file = self.file.take().ok_or_else(|| err(&self.path, "already committed"))?;
        let Some(tmp) = self.tmp.clone() else {
            // Written in place: nothing to rename; flush what the device takes.
            return file.sync_all().or_else(|e| if e.kind() == io::ErrorKind::InvalidInput { Ok(()) } else { Err(e) }).map_err(|e| err(&self.path, e));
        };
        file.sync_all().map_err(|e| err(&self.path, e))?;
        drop(file);
        std::fs::rename(&tmp, &self.target).map_err(|e| err(&self.path, e))?;
        self.tmp = None;
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Best effort: the rename is durable once the directory is.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("file already committed")),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        self.file = None;
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A pcap capture written to an [`AtomicFile`] (Ethernet, snapshot
/// length [`DEFAULT_SNAPLEN`](lvsnic_model::pcap::DEFAULT_SNAPLEN)):
/// nothing appears at its path until [`commit`](PcapFile::commit).
#[derive(Debug)]
pub struct PcapFile {
    w: PcapWriter<BufWriter<AtomicFile>>,
    path: PathBuf,
}

impl PcapFile {
    /// Creates the capture `path` under a temporary name and writes its
    /// global header. Errors are one line naming `path`.
    pub fn create(path: &Path, resolution: Resolution) -> Result<PcapFile, String> {
        let f = AtomicFile::create(path)?;
        let w = PcapWriter::new(BufWriter::new(f), resolution, pcap::LINKTYPE_ETHERNET, pcap::DEFAULT_SNAPLEN)
            .map_err(|e| err(path, e))?;
        Ok(PcapFile { w, path: path.into() })
    }

    /// The pcap writer, to write records one at a time.
    pub fn writer(&mut self) -> &mut PcapWriter<BufWriter<AtomicFile>> {
        &mut self.w
    }

    /// Writes `records` (keeping each record's original length).
    pub fn write_records<'a>(&mut self, records: impl IntoIterator<Item = &'a PcapRecord>) -> Result<(), String> {
        for r in records {
            self.w.write_record_orig(r.ts_ns, r.orig_len, &r.data).map_err(|e| err(&self.path, e))?;
        }
        Ok(())
    }

    /// Writes out what is buffered (call on every output before committing
    /// any, so that a write error leaves none of them).
    pub fn flush(&mut self) -> Result<(), String> {
        self.w.flush().map_err(|e| err(&self.path, e))
    }

    /// Flushes the capture, syncs it and renames it over its target (see
    /// [`AtomicFile::commit`]).
    pub fn commit(self) -> Result<(), String> {
        let path = self.path;
        let f = self.w.into_inner().into_inner().map_err(|e| err(&path, e.error()))?;
        f.commit()
    }
}

/// What identifies a file: its device and inode when it exists, else its
/// canonical directory joined with its name.
#[derive(Debug, PartialEq, Eq)]
enum FileId {
    Inode(u64, u64),
    Path(PathBuf),
}

fn file_id(path: &Path) -> FileId {
    if let Ok(m) = std::fs::metadata(path) {
        return FileId::Inode(m.dev(), m.ino());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    FileId::Path(match path.file_name() {
        Some(n) => dir.join(n),
        None => path.to_path_buf(),
    })
}

/// Refuses (one line) an output that is the same file as an input or as
/// another output. Each path comes with the option that named it
/// (`"--input"`, `"--output"`): files that exist are compared by device and
/// inode (symbolic and hard links included), others by canonical
/// directory and name. Special files (`/dev/null`) may repeat as outputs.
pub fn refuse_overlaps(inputs: &[(&str, &Path)], outputs: &[(&str, &Path)]) -> Result<(), String> {
    let special = |p: &Path| std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir());
    for (i, (oname, out)) in outputs.iter().enumerate() {
        let id = file_id(out);
        for (iname, inp) in inputs {
            if file_id(inp) == id {
                return Err(format!(
                    "{oname} {} is the same file as {iname} {}: refusing to overwrite an input",
                    out.display(),
                    inp.display()
                ));
            }
        }
        if special(out) {
            continue;
        }
        for (oname2, out2) in &outputs[..i] {
            if file_id(out2) == id {
                return Err(format!(
                    "{oname2} {} and {oname} {} are the same file: give each output its own path",
                    out2.display(),
                    out.display()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn dir(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("lvsnic-outfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn commit_replaces_and_drop_leaves_the_target() {
        let d = dir("commit");
        let p = d.0.join("out.pcap");
        std::fs::write(&p, b"old").unwrap();
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all_named(b"new contents").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"old", "target untouched before commit");
        assert_eq!(names(&d.0).len(), 2, "temporary beside it");
        drop(f);
        assert_eq!(std::fs::read(&p).unwrap(), b"old", "dropped: target unchanged");
        assert_eq!(names(&d.0), vec!["out.pcap"], "dropped: temporary removed");
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all_named(b"new contents").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new contents");
        assert_eq!(names(&d.0), vec!["out.pcap"]);
    }

    #[test]
    fn a_pcap_file_appears_only_on_commit() {
        let d = dir("pcap");
        let p = d.0.join("o.pcap");
        let recs = [PcapRecord { ts_ns: 5, orig_len: 3, data: vec![1, 2, 3] }];
        let mut f = PcapFile::create(&p, Resolution::Nano).unwrap();
        f.write_records(&recs).unwrap();
        drop(f);
        assert!(names(&d.0).is_empty(), "dropped: nothing left");
        let mut f = PcapFile::create(&p, Resolution::Nano).unwrap();
        f.write_records(&recs).unwrap();
        assert!(!p.exists());
        f.commit().unwrap();
        assert_eq!(pcap::read_file(&p).unwrap(), recs);
        assert_eq!(names(&d.0), vec!["o.pcap"]);
    }

    #[test]
    fn bad_targets_fail_at_create() {
        let d = dir("bad");
        let e = AtomicFile::create(&d.0).unwrap_err();
        assert!(e.ends_with("is a directory"), "{e}");
        let e = AtomicFile::create(&d.0.join("no/such/x.pcap")).unwrap_err();
        assert!(e.contains("x.pcap") && !e.contains('\n'), "{e}");
        assert!(names(&d.0).is_empty());
    }

    #[test]
    fn a_device_is_written_in_place() {
        let mut f = AtomicFile::create(Path::new("/dev/null")).unwrap();
        f.write_all_named(b"x").unwrap();
        f.commit().unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().file_type().is_file());
        // A full device fails on the write (or the flush), with the path.
        let mut f = AtomicFile::create(Path::new("/dev/full")).unwrap();
        let e = f.write_all_named(&[0u8; 8192]).unwrap_err();
        assert!(e.starts_with("/dev/full: "), "{e}");
    }

    #[test]
    fn overlaps_are_refused() {
        let d = dir("overlap");
        let a = d.0.join("a.pcap");
        std::fs::write(&a, b"input").unwrap();
        let link = d.0.join("link.pcap");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let hard = d.0.join("hard.pcap");
        std::fs::hard_link(&a, &hard).unwrap();
        let b = d.0.join("b.pcap");
        let dotted = d.0.join(".").join("b.pcap");
        let inp = [("--input", a.as_path())];
        let e = refuse_overlaps(&inp, &[("--output", a.as_path())]).unwrap_err();
        assert!(e.starts_with("--output ") && e.contains("same file as --input") && !e.contains('\n'), "{e}");
        assert!(refuse_overlaps(&inp, &[("--output", link.as_path())]).is_err());
        assert!(refuse_overlaps(&inp, &[("--output", hard.as_path())]).is_err());
        let e = refuse_overlaps(&inp, &[("--output", b.as_path()), ("--host", dotted.as_path())]).unwrap_err();
        assert!(e.contains("--output") && e.contains("--host") && e.contains("same file"), "{e}");
        refuse_overlaps(&inp, &[("--output", b.as_path()), ("--host", d.0.join("c.pcap").as_path())]).unwrap();
        refuse_overlaps(&inp, &[("--output", Path::new("/dev/null")), ("--host", Path::new("/dev/null"))]).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"input");
    }
}
