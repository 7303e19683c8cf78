//! An emulated lvsnic board for tests of the `etherbone` backend: the
//! hardware model (`ModelCore`, the core without a DMA engine) behind the
//! management port's protocol (boards/README.md), served from UDP sockets
//! by two threads.
//!
//! * Etherbone (its port 1234): register writes and reads of the core
//!   (`0x0000_0000..0x0001_0000`) and of the glue's CSRs (at
//!   [`EMU_GLUE_BASE`], in the documented order: [`GlueMap::at`]);
//!   replies go to the requester's address at the Etherbone port, as
//!   LiteEth sends them.
//! * Exceptions: each frame the core hands up is one datagram from its
//!   port 0x4C56 to `glue_host_ip:glue_host_port`.
//! * Inject datagrams to its port 0x4C56 go into the core, bad ones are
//!   counted in `inject_bad`.
//! * Its "wire": [`BoardEmulator::deliver`] puts a frame on the data port,
//!   [`BoardEmulator::take_transmitted`] returns what the core sent there
//!   (aborted frames included and flagged, as [`Wire`] reports them; the
//!   real board's MAC drops them).
//! * Faults: [`BoardEmulator::drop_replies`], [`BoardEmulator::garble_replies`],
//!   [`BoardEmulator::send_to_host`] (any datagram, e.g. garbage).
//!
//! The sockets are on a loopback address of their own (`127.a.b.1`, the
//! device binding `127.a.b.2`), so tests running in parallel each have
//! the board's real port numbers. [`EmulatedBoard`] pairs an emulator with
//! an [`EtherboneDevice`] and is a [`Device`] + [`Wire`], so everything
//! written for simulated cards (`offer`, `SlowPath::frame`,
//! `replay::run_split`) runs over Etherbone.

use super::dma_model::{Core, CoreOutputs, ModelCore, TxOut};
use super::etherbone::{EtherboneConfig, EtherboneDevice, GlueCounters, GlueMap};
use super::etherbone_wire::{encode_exception, parse_inject, Packet, Record, Writes, DATA_PORT, EB_PORT};
use super::rings::RxFrame;
use super::{Device, DeviceCounters, DeviceError, Wire};
use lvsnic_model::hw::{Csr, HwParams};
use lvsnic_model::time::Time;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Byte address of `glue_host_ip` on the emulated board.
pub const EMU_GLUE_BASE: u32 = 0x0001_0800;

#[derive(Debug)]
struct State {
    core: ModelCore,
    glue_map: GlueMap,
    host_ip: u32,
    host_port: u32,
    glue: GlueCounters,
    wire_tx: Vec<TxOut>,
    to_host: u64,
    drop_replies: u32,
    garble_replies: u32,
    /// A record with both writes and reads, or with more reads than
    /// LiteEth's buffer, arrived (LiteEth stalls for good).
    etherbone_wedged: bool,
}

impl State {
    fn write(&mut self, addr: u32, v: u32) {
        if addr < 0x1_0000 {
            self.core.write32(addr, v);
        } else if addr == self.glue_map.host_ip {
            self.host_ip = v;
        } else if addr == self.glue_map.host_port {
            self.host_port = v & 0xFFFF;
        }
    }

    fn read(&mut self, addr: u32) -> u32 {
        if addr < 0x1_0000 {
            return self.core.read32(addr);
        }
        let g = &self.glue;
        let values = [
            g.rx_frames,
            g.rx_bad_fcs,
            g.rx_overflow,
            g.tx_frames,
            g.tx_aborted,
            g.tx_overflow,
            g.host_frames,
            g.host_overflow,
            g.inject_frames,
            g.inject_bad,
            g.inject_overflow,
        ];
        match self.glue_map.counters.iter().position(|&a| a == addr) {
            Some(i) => values[i],
            None if addr == self.glue_map.host_ip => self.host_ip,
            None if addr == self.glue_map.host_port => self.host_port,
            None => 0,
        }
    }

    /// Moves the core's outputs on: to the wire, or as datagrams to the host.
    fn route(&mut self, data: &UdpSocket) {
        let mut outs = CoreOutputs::default();
        self.core.drain(&mut outs);
        for t in outs.tx {
            if t.abort {
                self.glue.tx_aborted = self.glue.tx_aborted.wrapping_add(1);
            } else {
                self.glue.tx_frames = self.glue.tx_frames.wrapping_add(1);
            }
            self.wire_tx.push(t);
        }
        let to = SocketAddr::new(IpAddr::V4(Ipv4Addr::from(self.host_ip)), self.host_port as u16);
        for h in outs.host {
            if data.send_to(&encode_exception(h.meta, &h.data), to).is_ok() {
                self.glue.host_frames = self.glue.host_frames.wrapping_add(1);
                self.to_host += 1;
            } else {
                self.glue.host_overflow = self.glue.host_overflow.wrapping_add(1);
            }
        }
    }
}

/// An emulated board serving its management port on UDP (see the module
/// documentation). Stopped when dropped.
#[derive(Debug)]
pub struct BoardEmulator {
    state: Arc<Mutex<State>>,
    data: Arc<UdpSocket>,
    eb_addr: SocketAddr,
    data_addr: SocketAddr,
    stop: Arc<AtomicBool>,
    eb_requests: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl BoardEmulator {
    /// A board with table sizes `params` serving Etherbone on `ip:eb_port`
    /// and datagrams on `ip:data_port`; exception datagrams go to
    /// 192.168.1.100:0x4C56 (the glue's reset) until the host says otherwise.
    pub fn start(params: HwParams, ip: Ipv4Addr, eb_port: u16, data_port: u16) -> io::Result<BoardEmulator> {
        let eb = UdpSocket::bind((ip, eb_port))?;
        let data = Arc::new(UdpSocket::bind((ip, data_port))?);
        let (eb_addr, data_addr) = (eb.local_addr()?, data.local_addr()?);
        let tick = Some(Duration::from_millis(20));
        eb.set_read_timeout(tick)?;
        data.set_read_timeout(tick)?;
        let state = Arc::new(Mutex::new(State {
            core: ModelCore::new(params),
            glue_map: GlueMap::at(EMU_GLUE_BASE),
            host_ip: u32::from(Ipv4Addr::new(192, 168, 1, 100)),
            host_port: DATA_PORT as u32,
            glue: GlueCounters::default(),
            wire_tx: Vec::new(),
            to_host: 0,
            drop_replies: 0,
            garble_replies: 0,
            etherbone_wedged: false,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let eb_requests = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        {
            let (state, stop, count) = (state.clone(), stop.clone(), eb_requests.clone());
            threads.push(std::thread::spawn(move || serve_etherbone(eb, eb_port, &state, &stop, &count)));
        }
        {
            let (state, stop, data) = (state.clone(), stop.clone(), data.clone());
            threads.push(std::thread::spawn(move || serve_inject(&data, &state, &stop)));
        }
        Ok(BoardEmulator { state, data, eb_addr, data_addr, stop, eb_requests, threads })
    }

    /// A board on a loopback address of its own (`127.a.b.1`, ports 1234
    /// and 0x4C56) with a free Etherbone port at `127.a.b.2`, the address
    /// for the device to bind; returns both.
    pub fn start_on_loopback(params: HwParams) -> io::Result<(BoardEmulator, Ipv4Addr)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let seed = (std::process::id() as u64).wrapping_mul(7919) ^ nanos as u64;
        let mut last = io::Error::other("no loopback address free");
        for _ in 0..64 {
            let k = seed.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(40_503));
            let (a, b) = (1 + (k % 254) as u8, (k / 254 % 256) as u8);
            let (board, host) = (Ipv4Addr::new(127, a, b, 1), Ipv4Addr::new(127, a, b, 2));
            if let Err(e) = UdpSocket::bind((host, EB_PORT)) {
                last = e;
                continue;
            }
            match BoardEmulator::start(params, board, EB_PORT, DATA_PORT) {
                Ok(emu) => return Ok((emu, host)),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn st(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where its Etherbone is served.
    pub fn etherbone_addr(&self) -> SocketAddr {
        self.eb_addr
    }

    /// Where its datagrams come from and injects go to.
    pub fn data_addr(&self) -> SocketAddr {
        self.data_addr
    }

    /// Its glue's CSR addresses.
    pub fn glue_map(&self) -> GlueMap {
        self.st().glue_map
    }

    /// The glue's counters.
    pub fn glue_counters(&self) -> GlueCounters {
        self.st().glue
    }

    /// A frame arriving on its data port (tuser: timestamp `ts`, sequence
    /// number `seq`); what the core does with it happens before this
    /// returns (exception datagrams sent, transmitted frames recorded).
    pub fn deliver(&self, frame: &[u8], ts: Time, seq: u32) {
        let mut st = self.st();
        st.glue.rx_frames = st.glue.rx_frames.wrapping_add(1);
        st.core.rx(frame, ts, seq);
        st.route(&self.data);
    }

    /// Frames its core sent to the data port since the last call, in order.
    pub fn take_transmitted(&self) -> Vec<TxOut> {
        std::mem::take(&mut self.st().wire_tx)
    }

    /// Datagrams it sent to the host (exceptions and [`send_to_host`](Self::send_to_host)).
    pub fn datagrams_to_host(&self) -> u64 {
        self.st().to_host
    }

    /// Inject datagrams it has taken (good and bad).
    pub fn inject_datagrams(&self) -> u64 {
        let st = self.st();
        st.glue.inject_frames as u64 + st.glue.inject_bad as u64
    }

    /// Etherbone packets received.
    pub fn etherbone_requests(&self) -> u64 {
        self.eb_requests.load(Ordering::Relaxed)
    }

    /// The next `n` Etherbone replies are not sent (their requests are
    /// carried out).
    pub fn drop_replies(&self, n: u32) {
        self.st().drop_replies = n;
    }

    /// The next `n` Etherbone replies are sent with a wrong magic.
    pub fn garble_replies(&self, n: u32) {
        self.st().garble_replies = n;
    }

    /// Sends `bytes` as a datagram from its data port to the host's
    /// exception address.
    pub fn send_to_host(&self, bytes: &[u8]) -> io::Result<()> {
        let mut st = self.st();
        let to = SocketAddr::new(IpAddr::V4(Ipv4Addr::from(st.host_ip)), st.host_port as u16);
        self.data.send_to(bytes, to)?;
        st.to_host += 1;
        Ok(())
    }

    /// Runs `f` on the board's core (e.g. to read the model's tables).
    pub fn with_core<R>(&self, f: impl FnOnce(&mut ModelCore) -> R) -> R {
        f(&mut self.st().core)
    }
}

impl Drop for BoardEmulator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn st_wedged(state: &Mutex<State>) -> bool {
    lock(state).etherbone_wedged
}

fn serve_etherbone(sock: UdpSocket, eb_port: u16, state: &Mutex<State>, stop: &AtomicBool, count: &AtomicU64) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok((len, from)) = sock.recv_from(&mut buf) else { continue };
        count.fetch_add(1, Ordering::Relaxed);
        // LiteEth drops what does not parse.
        let Ok(p) = Packet::decode(&buf[..len]) else { continue };
        // As LiteEth (2023.12): one record per packet, and a record with
        // both writes and reads wedges its Etherbone for good (its record
        // receiver takes the base return address for the first read
        // address): here it is dropped, and so is every later request; so
        // is every request after one of more reads than its buffer holds.
        if st_wedged(state) {
            continue;
        }
        for r in p.records.into_iter().take(1) {
            let mut st = lock(state);
            if r.writes.is_some() && r.reads.is_some() {
                st.etherbone_wedged = true;
                continue;
            }
            if let Some(w) = &r.writes {
                for (i, v) in w.values.iter().enumerate() {
                    st.write(w.base.wrapping_add(4 * i as u32), *v);
                }
            }
            let Some(reads) = r.reads else { continue };
            // More reads than LiteEth's buffer: answered, then nothing more.
            if reads.addrs.len() > super::etherbone::LITEETH_BUFFER_DEPTH {
                st.etherbone_wedged = true;
            }
            let values = reads.addrs.iter().map(|&a| st.read(a)).collect();
            let mut reply = Packet::new(vec![Record::new(Some(Writes { base: reads.ret, values }), None)]).encode();
            if st.drop_replies > 0 {
                st.drop_replies -= 1;
                continue;
            }
            if st.garble_replies > 0 {
                st.garble_replies -= 1;
                reply[0] ^= 0xFF;
            }
            drop(st);
            // As LiteEth: to the requester's address, at the Etherbone port.
            let _ = sock.send_to(&reply, SocketAddr::new(from.ip(), eb_port));
        }
    }
}

fn serve_inject(data: &UdpSocket, state: &Mutex<State>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok((len, _)) = data.recv_from(&mut buf) else { continue };
        let mut st = lock(state);
        match parse_inject(&buf[..len]) {
            Some((seq, frame)) => {
                st.glue.inject_frames = st.glue.inject_frames.wrapping_add(1);
                st.core.inject(frame, seq);
                st.route(data);
            }
            None => st.glue.inject_bad = st.glue.inject_bad.wrapping_add(1),
        }
    }
}

/// An [`EtherboneDevice`] driving a [`BoardEmulator`]: a [`Device`] whose
/// network is simulated ([`Wire`]), so tests written for the `model`
/// backend run over the management port.
#[derive(Debug)]
pub struct EmulatedBoard {
    /// The device (the host side).
    pub dev: EtherboneDevice,
    /// The board.
    pub emu: BoardEmulator,
}

/// How long [`EmulatedBoard`] waits for datagrams known to be on their way.
const SETTLE: Duration = Duration::from_secs(5);

impl EmulatedBoard {
    /// A board with `params` on a loopback address of its own and a device
    /// opened on it (glue at [`EMU_GLUE_BASE`]; 200 ms per try, 3 tries).
    pub fn start(params: HwParams) -> Result<EmulatedBoard, DeviceError> {
        let (emu, host) = BoardEmulator::start_on_loopback(params)
            .map_err(|e| super::etherbone::EtherboneError::Socket { what: "starting the board emulator".into(), source: e })?;
        let mut cfg = EtherboneConfig::new(emu.etherbone_addr());
        cfg.bind = IpAddr::V4(host);
        cfg.glue = Some(emu.glue_map());
        cfg.timeout = Duration::from_millis(200);
        let dev = EtherboneDevice::open(cfg)?;
        Ok(EmulatedBoard { dev, emu })
    }
}

impl Csr for EmulatedBoard {
    fn write32(&mut self, addr: u32, value: u32) {
        self.dev.write32(addr, value)
    }
    fn read32(&mut self, addr: u32) -> u32 {
        self.dev.read32(addr)
    }
}

impl Device for EmulatedBoard {
    fn backend(&self) -> &'static str {
        self.dev.backend()
    }
    fn recv(&mut self, out: &mut Vec<RxFrame>, max: usize) -> Result<usize, DeviceError> {
        self.dev.recv(out, max)
    }
    fn send(&mut self, frames: &[(&[u8], u32)]) -> Result<usize, DeviceError> {
        self.dev.send(frames)
    }
    fn counters(&mut self) -> DeviceCounters {
        self.dev.counters()
    }
}

impl Wire for EmulatedBoard {
    /// Sends queued register writes first (the frame must meet the tables
    /// the host wrote), then the frame; waits for the exception datagrams
    /// it caused.
    fn deliver(&mut self, frame: &[u8], ts: Time, seq: u32) {
        self.dev.push_writes();
        self.emu.deliver(frame, ts, seq);
        let _ = self.dev.wait_datagrams(self.emu.datagrams_to_host(), SETTLE);
    }
    /// Waits until the board has taken every inject datagram sent, then
    /// returns what it transmitted.
    fn transmitted(&mut self) -> Vec<TxOut> {
        let t0 = Instant::now();
        while self.emu.inject_datagrams() < self.dev.injected() && t0.elapsed() < SETTLE {
            std::thread::sleep(Duration::from_micros(100));
        }
        self.emu.take_transmitted()
    }
}
