//! The `etherbone` backend: an lvsnic board driven over its management
//! port (boards/README.md "Management port"), from a plain UDP socket.
//!
//! * **Registers** ([`Csr`]): Etherbone on UDP port 1234
//!   ([`etherbone_wire`](super::etherbone_wire)). The core's register map
//!   (docs/hardware.md §6) is at byte addresses `0x0000_0000..0x0001_0000`,
//!   the LiteX glue's CSRs above (their addresses come from the build's
//!   `csr.csv`: [`GlueMap`]). LiteEth answers to UDP port 1234 of the
//!   requester whatever its source port, so the device binds local port
//!   1234 (the board's Etherbone port) and no `litex_server` may hold it
//!   at the same time.
//! * **Exceptions** ([`Device::recv`]): UDP datagrams from the board's port
//!   0x4C56 to `glue_host_ip:glue_host_port`, read without blocking and
//!   checked (length, magic `"LVCX"`, metadata); a bad one is counted
//!   ([`LinkCounters`]) and skipped, never fatal. With a [`GlueMap`] the
//!   device binds an ephemeral port and writes its own address into the
//!   glue at open; without one it binds port 0x4C56 (the glue's reset
//!   `host_port`), and the board must have been built with this host's
//!   address (`--host-ip`, reset 192.168.1.100).
//! * **Injection** ([`Device::send`]): one datagram per frame to the
//!   board's port 0x4C56 (sequence number, magic `"LVNJ"`, frame).
//!
//! **Write batching.** [`Csr::write32`] queues the write; consecutive
//! addresses (the staging registers, index and command of a flow or
//! action write, `0x200..=0x214`) go out as one Etherbone record of up to
//! [`EtherboneConfig::max_batch`] writes. The queue is sent before any
//! read, before a write to another address, and at the start of every
//! [`Device`] call, so the order of register accesses is the program's.
//! Etherbone does not answer writes, so every packet of writes is followed
//! at once by a packet of reads (of `ID` when nothing else is read), whose
//! reply is the acknowledgement: LiteEth carries out packets in the order
//! they arrive. They are two packets, not one record with writes and
//! reads, because LiteEth takes one record per packet and its record
//! receiver (2023.12) mistakes the base return address of such a record
//! for its first read address and then stalls for good (found with the
//! full-system simulation, `host-driver/tests/e2e_board.rs`). A lost
//! packet of writes whose read packet arrives is not detected; on the
//! direct link to the board this is not expected.
//!
//! **Lost and garbled replies.** Each request waits
//! [`EtherboneConfig::timeout`] for its reply and is sent again, up to
//! [`EtherboneConfig::tries`] times in all; replies are matched by a tag
//! in the base return address, so a late reply to an earlier request is
//! counted as stale and ignored. A resent request repeats its writes:
//! the core's register writes are idempotent (a repeated flow or action
//! command writes the same staging entry to the same index again; an
//! action's counters are zeroed again). When every try fails, the
//! [`Csr`] methods, which return plain values, cannot say so: a read
//! returns `0xFFFF_FFFF` (as a PCIe read of a dead card does), the error
//! is recorded, and the next [`Device::recv`] or [`Device::send`] returns
//! it as [`DeviceError::Etherbone`]. [`EtherboneDevice::take_error`] and
//! [`EtherboneDevice::flush`] give it to callers that use the registers
//! only. Nothing blocks for longer than `timeout × tries` per access.

use super::etherbone_wire::{
    encode_inject, parse_exception, DatagramError, Packet, Reads, Record, Writes, DATA_PORT, EB_PORT, INJ_FRAME_MAX,
    INJ_FRAME_MIN, MAX_COUNT,
};
use super::rings::{RxCounters, RxFrame, TxCounters};
use super::{check_core_identity, CoreCounters, CoreIdentity, Device, DeviceCounters, DeviceError};
use lvsnic_model::hw::regs::{CNT_BASE, CNT_FWD, CNT_HOST, CNT_INJECT, CNT_RX, ID};
use lvsnic_model::hw::Csr;
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

/// The most reads (and writes) one Etherbone record may carry to a LiteX
/// board: LiteEth's Etherbone `buffer_depth` (LiteX's `add_etherbone`
/// default, 16, as the lvsnic boards are built). The reply to a record of
/// 17 reads still comes, but that board's Etherbone answers nothing after
/// it (seen in the full-system simulation, LiteX 2023.12).
pub const LITEETH_BUFFER_DEPTH: usize = 16;

/// The glue's counters, in the order the glue declares them (and
/// `csr.csv` lists them) after `host_ip` and `host_port`.
pub const GLUE_COUNTER_NAMES: [&str; 11] = [
    "rx_frames",
    "rx_bad_fcs",
    "rx_overflow",
    "tx_frames",
    "tx_aborted",
    "tx_overflow",
    "host_frames",
    "host_overflow",
    "inject_frames",
    "inject_bad",
    "inject_overflow",
];

/// Byte addresses of the LiteX glue's CSRs (`glue_*` in the build's
/// `csr.csv`; 32-bit CSRs, one per word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlueMap {
    /// `glue_host_ip`: where exception datagrams go (IPv4, RW).
    pub host_ip: u32,
    /// `glue_host_port`: their UDP port (RW, 16 bits).
    pub host_port: u32,
    /// The counters, in [`GLUE_COUNTER_NAMES`] order.
    pub counters: [u32; 11],
}

impl GlueMap {
    /// The glue's CSRs in their documented order (`host_ip`, `host_port`,
    /// then [`GLUE_COUNTER_NAMES`]), one 32-bit word apart from `base`,
    /// the address of `glue_host_ip`: how LiteX lays out one module's
    /// 32-bit CSRs.
    pub fn at(base: u32) -> GlueMap {
        GlueMap { host_ip: base, host_port: base + 4, counters: std::array::from_fn(|i| base + 8 + 4 * i as u32) }
    }

    /// The `glue_*` rows of a LiteX `csr.csv` (`csr_register,NAME,ADDRESS,SIZE,MODE`).
    pub fn from_csr_csv(text: &str) -> Result<GlueMap, String> {
        let mut found = std::collections::HashMap::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            if f.len() >= 3 && f[0] == "csr_register" {
                if let Some(n) = f[1].strip_prefix("glue_") {
                    found.insert(n.to_string(), parse_u32(f[2]).ok_or_else(|| format!("bad address {:?} of {}", f[2], f[1]))?);
                }
            }
        }
        let get = |n: &str| found.get(n).copied().ok_or_else(|| format!("no glue_{n} in the CSR list"));
        let (host_ip, host_port) = (get("host_ip")?, get("host_port")?);
        let mut counters = [0; 11];
        for (c, n) in counters.iter_mut().zip(GLUE_COUNTER_NAMES) {
            *c = get(n)?;
        }
        Ok(GlueMap { host_ip, host_port, counters })
    }

    /// `--glue`: the byte address of `glue_host_ip` (decimal or `0x` hex;
    /// the others follow in the documented order) or the path of the
    /// build's `csr.csv`.
    pub fn parse_option(s: &str) -> Result<GlueMap, String> {
        if let Some(a) = parse_u32(s) {
            return Ok(GlueMap::at(a));
        }
        let text = std::fs::read_to_string(s).map_err(|e| format!("--glue {s}: not an address, and as a csr.csv: {e}"))?;
        GlueMap::from_csr_csv(&text).map_err(|e| format!("--glue {s}: {e}"))
    }
}

fn parse_u32(s: &str) -> Option<u32> {
    let s = s.trim().replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The glue's counters (boards/README.md): frames of the data port and
/// of the management port's datagrams, as the board counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlueCounters {
    /// Data-port frames into the core.
    pub rx_frames: u32,
    /// Data-port frames dropped for FCS errors.
    pub rx_bad_fcs: u32,
    /// Data-port frames dropped for lack of buffer.
    pub rx_overflow: u32,
    /// Frames transmitted on the data port.
    pub tx_frames: u32,
    /// Frames the core aborted (not transmitted).
    pub tx_aborted: u32,
    /// Frames dropped on the way to the MAC for lack of buffer.
    pub tx_overflow: u32,
    /// Exception datagrams sent.
    pub host_frames: u32,
    /// Exception frames dropped for lack of buffer.
    pub host_overflow: u32,
    /// Inject datagrams taken into the core.
    pub inject_frames: u32,
    /// Inject datagrams dropped (bad magic, frame shorter than 14 bytes).
    pub inject_bad: u32,
    /// Inject datagrams dropped for lack of buffer.
    pub inject_overflow: u32,
}

impl GlueCounters {
    /// From the counter registers' values in [`GLUE_COUNTER_NAMES`] order.
    pub fn from_values(v: [u32; 11]) -> GlueCounters {
        GlueCounters {
            rx_frames: v[0],
            rx_bad_fcs: v[1],
            rx_overflow: v[2],
            tx_frames: v[3],
            tx_aborted: v[4],
            tx_overflow: v[5],
            host_frames: v[6],
            host_overflow: v[7],
            inject_frames: v[8],
            inject_bad: v[9],
            inject_overflow: v[10],
        }
    }
}

/// What the host side of the management port counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Etherbone requests sent (first tries).
    pub requests: u64,
    /// Requests sent again after a lost or garbled reply.
    pub retries: u64,
    /// Requests given up after every try.
    pub failures: u64,
    /// Replies that did not parse or did not match their request's shape.
    pub garbled: u64,
    /// Replies to an earlier request (tag not the one in flight).
    pub stale: u64,
    /// Datagrams received on the exception port.
    pub datagrams: u64,
    /// Of them: shorter than 24 bytes plus a frame.
    pub bad_short: u64,
    /// Of them: magic not `"LVCX"`.
    pub bad_magic: u64,
    /// Of them: metadata that does not parse.
    pub bad_meta: u64,
}

/// The management port's counters: the host's and (with a [`GlueMap`])
/// the board's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManagementCounters {
    /// Host side.
    pub link: LinkCounters,
    /// The glue's counters, if its CSRs are known.
    pub glue: Option<GlueCounters>,
}

/// How to reach a board.
#[derive(Clone, Debug)]
pub struct EtherboneConfig {
    /// The board's Etherbone endpoint (port 1234 unless built otherwise);
    /// the device binds the same port locally, as LiteEth answers to it.
    pub board: SocketAddr,
    /// The board's exception/inject port (0x4C56).
    pub data_port: u16,
    /// Local address to bind (unspecified: any).
    pub bind: IpAddr,
    /// The glue's CSRs; `None`: exceptions are awaited on port 0x4C56,
    /// no glue counters.
    pub glue: Option<GlueMap>,
    /// How long one try waits for its reply.
    pub timeout: Duration,
    /// Tries per request (at least 1).
    pub tries: u32,
    /// Most writes, and most reads, in one record (1..=255; default
    /// [`LITEETH_BUFFER_DEPTH`]).
    pub max_batch: usize,
}

impl EtherboneConfig {
    /// Defaults for a board at `board`: 100 ms per try, 3 tries, records
    /// of up to [`LITEETH_BUFFER_DEPTH`] writes or reads, any local
    /// address, no glue map.
    pub fn new(board: SocketAddr) -> EtherboneConfig {
        EtherboneConfig {
            board,
            data_port: DATA_PORT,
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            glue: None,
            timeout: Duration::from_millis(100),
            tries: 3,
            max_batch: LITEETH_BUFFER_DEPTH,
        }
    }

    /// `--device HOST[:PORT]`: the board's address (IPv4) and Etherbone
    /// port (default 1234).
    pub fn parse_device(spec: &str) -> Result<SocketAddr, EtherboneError> {
        let bad = |msg: String| EtherboneError::Address { spec: spec.to_string(), msg };
        let with_port = if spec.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
            spec.to_string()
        } else {
            format!("{spec}:{EB_PORT}")
        };
        let addrs = with_port.to_socket_addrs().map_err(|e| bad(e.to_string()))?;
        let mut v4 = addrs.filter(|a| a.is_ipv4());
        v4.next().ok_or_else(|| bad("no IPv4 address (the board's UDP/IP stack is IPv4)".into()))
    }
}

/// A management-port failure, as one line.
#[derive(Debug, thiserror::Error)]
pub enum EtherboneError {
    /// `--device` is not a usable address.
    #[error("--device {spec}: {msg} (expected HOST[:PORT], e.g. 192.168.1.50 or 192.168.1.50:1234)")]
    Address {
        /// The option's value.
        spec: String,
        /// What is wrong.
        msg: String,
    },
    /// A socket could not be set up or used.
    #[error("{what}: {source}")]
    Socket {
        /// What failed, with a hint.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// No reply to a request after every try.
    #[error("no Etherbone reply from {board} after {tries} tries of {timeout_ms} ms{last} (board powered, link up, address right, nothing else bound to the Etherbone port?)")]
    NoReply {
        /// The board's Etherbone endpoint.
        board: SocketAddr,
        /// Tries made.
        tries: u32,
        /// Wait per try.
        timeout_ms: u64,
        /// The last thing that went wrong, if more than silence.
        last: String,
    },
    /// The glue's CSRs are not where the map says.
    #[error("glue CSRs: {0}")]
    Glue(String),
    /// A frame to inject is too short or too long for a datagram.
    #[error("inject frame of {len} bytes: the board takes {min}..={max}")]
    FrameLength {
        /// The frame's length.
        len: usize,
        /// Shortest.
        min: usize,
        /// Longest.
        max: usize,
    },
}

/// An lvsnic board behind its management port.
#[derive(Debug)]
pub struct EtherboneDevice {
    cfg: EtherboneConfig,
    eb: UdpSocket,
    data: UdpSocket,
    /// Writes not yet sent (consecutive addresses).
    pending: Option<Writes>,
    tag: u32,
    fault: Option<EtherboneError>,
    queue: VecDeque<RxFrame>,
    buf: Vec<u8>,
    link: LinkCounters,
    rx: RxCounters,
    tx: TxCounters,
    /// What the identification registers said.
    pub identity: CoreIdentity,
}

fn sock_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> EtherboneError {
    let what = what.into();
    move |source| EtherboneError::Socket { what, source }
}

impl EtherboneDevice {
    /// Opens the sockets, checks `ID`, `VERSION`, `CAPS0/1` and, with a
    /// glue map, points the board's exception datagrams at this host
    /// (and reads them back).
    pub fn open(cfg: EtherboneConfig) -> Result<EtherboneDevice, DeviceError> {
        let board = cfg.board;
        let eb = UdpSocket::bind((cfg.bind, board.port())).map_err(sock_err(format!(
            "binding UDP {}:{} for Etherbone (LiteEth answers to that port; is litex_server or another lvsnic using it?)",
            cfg.bind,
            board.port()
        )))?;
        eb.connect(board).map_err(sock_err(format!("Etherbone socket to {board}")))?;
        let data_local = if cfg.glue.is_some() { 0 } else { DATA_PORT };
        let data = UdpSocket::bind((cfg.bind, data_local))
            .map_err(sock_err(format!("binding UDP {}:{data_local} for exception datagrams", cfg.bind)))?;
        let data_peer = SocketAddr::new(board.ip(), cfg.data_port);
        data.connect(data_peer).map_err(sock_err(format!("datagram socket to {data_peer}")))?;
        data.set_nonblocking(true).map_err(sock_err("datagram socket"))?;
        let mut dev = EtherboneDevice {
            cfg: EtherboneConfig { tries: cfg.tries.max(1), max_batch: cfg.max_batch.clamp(1, MAX_COUNT), ..cfg },
            eb,
            data,
            pending: None,
            // Tags of an earlier run (a restarted daemon) are unlikely to
            // come back as this run's.
            tag: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos() & !3),
            fault: None,
            queue: VecDeque::new(),
            buf: vec![0; 65536],
            link: LinkCounters::default(),
            rx: RxCounters::default(),
            tx: TxCounters::default(),
            identity: CoreIdentity { version: 0, params: lvsnic_model::hw::HwParams { data_width: 0, flow_buckets_log2: 0, action_log2: 0, vip_count: 0, ipv6: false } },
        };
        // First contact with its own error, then the identity registers.
        dev.read_regs(&[ID])?;
        let identity = check_core_identity(&mut dev);
        dev.take_error().map_or(Ok(()), Err)?;
        dev.identity = identity?;
        if let Some(g) = dev.cfg.glue {
            let local = dev.data.local_addr().map_err(sock_err("datagram socket"))?;
            let IpAddr::V4(ip) = local.ip() else {
                return Err(EtherboneError::Glue(format!("local address {local} is not IPv4")).into());
            };
            let (ip, port) = (u32::from(ip), local.port() as u32);
            dev.write32(g.host_ip, ip);
            dev.write32(g.host_port, port);
            let back = dev.read_regs(&[g.host_ip, g.host_port])?;
            if back != [ip, port] {
                return Err(EtherboneError::Glue(format!(
                    "wrote {ip:#010x}, {port:#06x} to {:#x}, {:#x} and read back {:#010x}, {:#010x}: not the glue's host_ip/host_port (check --glue against the build's csr.csv)",
                    g.host_ip, g.host_port, back[0], back[1]
                ))
                .into());
            }
        }
        Ok(dev)
    }

    /// The configuration in use.
    pub fn config(&self) -> &EtherboneConfig {
        &self.cfg
    }

    /// The local address exception datagrams are received on.
    pub fn datagram_addr(&self) -> io::Result<SocketAddr> {
        self.data.local_addr()
    }

    /// Reads registers in order (one request per
    /// [`EtherboneConfig::max_batch`] of them, queued writes first).
    pub fn read_regs(&mut self, addrs: &[u32]) -> Result<Vec<u32>, EtherboneError> {
        let mut out = Vec::with_capacity(addrs.len());
        for chunk in addrs.chunks(self.cfg.max_batch) {
            let w = self.pending.take();
            out.extend(self.transact(w, chunk)?);
        }
        Ok(out)
    }

    /// Sends queued writes and waits for their acknowledgement.
    pub fn flush(&mut self) -> Result<(), EtherboneError> {
        match self.pending.take() {
            Some(w) => self.transact(Some(w), &[]).map(drop),
            None => Ok(()),
        }
    }

    /// Sends queued writes now; a failure is recorded for the next
    /// [`Device`] call, as any register access's.
    pub fn push_writes(&mut self) {
        if let Err(e) = self.flush() {
            self.record(e);
        }
    }

    /// The error of a register access that failed since the last call
    /// (the first one, if several did).
    pub fn take_error(&mut self) -> Option<EtherboneError> {
        self.fault.take()
    }

    /// Flushes queued writes and returns any recorded failure.
    fn check(&mut self) -> Result<(), EtherboneError> {
        if let Err(e) = self.flush() {
            self.record(e);
        }
        self.take_error().map_or(Ok(()), Err)
    }

    fn record(&mut self, e: EtherboneError) {
        self.fault.get_or_insert(e);
    }

    /// One request (writes, then reads; a read of `ID` when there are none)
    /// and its reply, with retries.
    fn transact(&mut self, writes: Option<Writes>, reads: &[u32]) -> Result<Vec<u32>, EtherboneError> {
        let addrs = if reads.is_empty() { vec![ID] } else { reads.to_vec() };
        self.tag = self.tag.wrapping_add(4);
        let tag = self.tag;
        // Writes in a packet of their own, then the reads: LiteEth takes
        // one record per packet, and its record receiver (2023.12) cannot
        // take a record with both writes and reads (it keeps the base
        // return address as the first read address and then stalls).
        let wpkt = writes.map(|w| Packet::new(vec![Record::new(Some(w), None)]).encode());
        let pkt = Packet::new(vec![Record::new(None, Some(Reads { ret: tag, addrs }))]).encode();
        let n = if reads.is_empty() { 1 } else { reads.len() };
        self.link.requests += 1;
        let mut last = String::new();
        for attempt in 0..self.cfg.tries {
            if attempt > 0 {
                self.link.retries += 1;
            }
            if let Err(e) = wpkt.as_ref().map_or(Ok(0), |w| self.eb.send(w)).and_then(|_| self.eb.send(&pkt)) {
                last = format!("; send: {e}");
                std::thread::sleep(self.cfg.timeout);
                continue;
            }
            let deadline = Instant::now() + self.cfg.timeout;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                let _ = self.eb.set_read_timeout(Some(left));
                let len = match self.eb.recv(&mut self.buf) {
                    Ok(len) => len,
                    Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => break,
                    Err(e) => {
                        // E.g. ICMP port unreachable on a connected socket.
                        last = format!("; {e}");
                        std::thread::sleep(left);
                        break;
                    }
                };
                match Packet::decode(&self.buf[..len]) {
                    Ok(p) => match p.records.as_slice() {
                        [Record { writes: Some(w), reads: None, .. }] if w.base == tag && w.values.len() == n => {
                            return Ok(if reads.is_empty() { Vec::new() } else { w.values.clone() });
                        }
                        [Record { writes: Some(w), .. }] if w.base != tag => self.link.stale += 1,
                        _ => {
                            self.link.garbled += 1;
                            last = "; last reply not the shape of its request".into();
                        }
                    },
                    Err(e) => {
                        self.link.garbled += 1;
                        last = format!("; last reply garbled: {e}");
                    }
                }
            }
        }
        self.link.failures += 1;
        Err(EtherboneError::NoReply {
            board: self.cfg.board,
            tries: self.cfg.tries,
            timeout_ms: self.cfg.timeout.as_millis() as u64,
            last,
        })
    }

    /// Takes one received datagram: an exception frame into the queue, or
    /// counted as bad.
    fn take_datagram(&mut self, len: usize) {
        self.link.datagrams += 1;
        match parse_exception(&self.buf[..len]) {
            Ok((meta, frame)) => {
                self.rx.frames += 1;
                self.rx.bytes += frame.len() as u64;
                self.queue.push_back(RxFrame { meta, data: frame.to_vec() });
            }
            Err(DatagramError::Short(_)) => {
                self.link.bad_short += 1;
                self.rx.bad_len += 1;
            }
            Err(DatagramError::Magic(_)) => self.link.bad_magic += 1,
            Err(DatagramError::Meta) => {
                self.link.bad_meta += 1;
                self.rx.bad_meta += 1;
            }
        }
    }

    /// Reads every datagram waiting (without blocking) into the queue.
    fn drain_socket(&mut self, max: usize) -> Result<(), EtherboneError> {
        while self.queue.len() < max {
            match self.data.recv(&mut self.buf) {
                Ok(len) => self.take_datagram(len),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // ICMP errors of earlier sends (board unreachable) surface
                // here on a connected socket: reported by `send`, not here.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(EtherboneError::Socket { what: "receiving exception datagrams".into(), source: e }),
            }
        }
        Ok(())
    }

    /// Waits (up to `timeout`) until `total` datagrams have been received
    /// since open, keeping their frames for [`Device::recv`]; false on
    /// timeout. For emulated boards, whose datagrams are known to be on
    /// their way.
    pub fn wait_datagrams(&mut self, total: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.link.datagrams < total {
            if self.drain_socket(usize::MAX).is_err() || Instant::now() >= deadline {
                return self.link.datagrams >= total;
            }
            if self.link.datagrams < total {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        true
    }

    /// Inject datagrams sent since open.
    pub fn injected(&self) -> u64 {
        self.tx.frames
    }

    /// The host side's counters.
    pub fn link_counters(&self) -> LinkCounters {
        self.link
    }

    fn read_counter_values(&mut self) -> Result<(CoreCounters, Option<GlueCounters>), EtherboneError> {
        let mut addrs = Vec::with_capacity(8 + 11);
        for n in [CNT_RX, CNT_FWD, CNT_HOST, CNT_INJECT] {
            addrs.extend([CNT_BASE + 8 * n, CNT_BASE + 8 * n + 4]); // LO (latches HI), then HI
        }
        if let Some(g) = self.cfg.glue {
            addrs.extend(g.counters);
        }
        let v = self.read_regs(&addrs)?;
        let c = |i: usize| (v[2 * i + 1] as u64) << 32 | v[2 * i] as u64;
        let core = CoreCounters { rx: c(0), forwarded: c(1), to_host: c(2), injected: c(3) };
        let glue = self.cfg.glue.map(|_| GlueCounters::from_values(std::array::from_fn(|i| v[8 + i])));
        Ok((core, glue))
    }
}

impl Csr for EtherboneDevice {
    fn write32(&mut self, addr: u32, value: u32) {
        if let Some(w) = &mut self.pending {
            if w.base.wrapping_add(4 * w.values.len() as u32) == addr && w.values.len() < self.cfg.max_batch {
                w.values.push(value);
                return;
            }
            if let Err(e) = self.flush() {
                self.record(e);
            }
        }
        self.pending = Some(Writes { base: addr, values: vec![value] });
    }

    fn read32(&mut self, addr: u32) -> u32 {
        match self.read_regs(&[addr]) {
            Ok(v) => v[0],
            Err(e) => {
                self.record(e);
                0xFFFF_FFFF
            }
        }
    }
}

impl Device for EtherboneDevice {
    fn backend(&self) -> &'static str {
        "etherbone"
    }

    fn recv(&mut self, out: &mut Vec<RxFrame>, max: usize) -> Result<usize, DeviceError> {
        self.check()?;
        self.drain_socket(max)?;
        let n = max.min(self.queue.len());
        out.extend(self.queue.drain(..n));
        Ok(n)
    }

    fn send(&mut self, frames: &[(&[u8], u32)]) -> Result<usize, DeviceError> {
        self.check()?;
        for (frame, seq) in frames {
            if !(INJ_FRAME_MIN..=INJ_FRAME_MAX).contains(&frame.len()) {
                return Err(EtherboneError::FrameLength { len: frame.len(), min: INJ_FRAME_MIN, max: INJ_FRAME_MAX }.into());
            }
            let d = encode_inject(*seq, frame);
            // A connected socket reports an earlier ICMP error on the next
            // call: that datagram is gone, this one is sent again once.
            let r = match self.data.send(&d) {
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => self.data.send(&d),
                r => r,
            };
            r.map_err(sock_err(format!("sending an inject datagram to {}:{}", self.cfg.board.ip(), self.cfg.data_port)))?;
            self.tx.frames += 1;
            self.tx.bytes += frame.len() as u64;
        }
        Ok(frames.len())
    }

    fn counters(&mut self) -> DeviceCounters {
        let (core, glue) = match self.read_counter_values() {
            Ok(v) => v,
            Err(e) => {
                self.record(e);
                (CoreCounters::default(), None)
            }
        };
        DeviceCounters {
            rx: self.rx,
            tx: self.tx,
            core,
            management: Some(ManagementCounters { link: self.link, glue }),
            ..Default::default()
        }
    }
}

impl Drop for EtherboneDevice {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glue_map_from_base_and_csv() {
        let g = GlueMap::at(0x0001_0800);
        assert_eq!((g.host_ip, g.host_port, g.counters[0], g.counters[10]), (0x10800, 0x10804, 0x10808, 0x10830));
        let mut csv = String::from("#--------\n# CSR Registers\ncsr_base,glue,0x00010800,,\ncsr_register,ctrl_reset,0x00010000,1,rw\n");
        csv += "csr_register,glue_host_ip,0x00010800,1,rw\ncsr_register,glue_host_port,0x00010804,1,rw\n";
        for (i, n) in GLUE_COUNTER_NAMES.iter().enumerate() {
            csv += &format!("csr_register,glue_{n},0x{:08x},1,ro\n", 0x10808 + 4 * i);
        }
        assert_eq!(GlueMap::from_csr_csv(&csv), Ok(g));
        assert!(GlueMap::from_csr_csv("csr_register,glue_host_ip,0x10,1,rw\n").unwrap_err().contains("glue_host_port"));
        assert_eq!(GlueMap::parse_option("0x1_0800"), Ok(g));
        assert_eq!(GlueMap::parse_option("67584"), Ok(g));
        assert!(GlueMap::parse_option("/nonexistent/csr.csv").is_err());
    }

    #[test]
    fn device_spec() {
        assert_eq!(EtherboneConfig::parse_device("192.168.1.50").unwrap(), "192.168.1.50:1234".parse().unwrap());
        assert_eq!(EtherboneConfig::parse_device("127.0.0.2:4000").unwrap(), "127.0.0.2:4000".parse().unwrap());
        assert!(EtherboneConfig::parse_device("").is_err());
    }
}
