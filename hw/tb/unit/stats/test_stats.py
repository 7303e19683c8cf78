"""lvsnic_stats: per-action packet/byte counters and per-slot last_hit
(docs/hardware.md §4, §6), FLOW_BUCKETS_LOG2 4, ACTION_LOG2 4, EV_DEPTH 8.

Reference: a Python model of the operations in the order the block takes
them (observable on its ports): an event popped from its queue (ev_pop)
adds {1, total length} to counters[act] and sets last_hit[slot] = ts; a host
operation acknowledged (host_ack) runs in the first cycle after with
init_busy low: zero / read last_hit[slot], zero / read counters[act]. Every
read result (lh_rd_valid, cnt_rd_valid, in order) must equal the model's
value at that point. Covered: the reset sweep (RAMs start random, must read
0; operations and events wait for it), back-to-back events on one action
(the read-modify-write forwarding), clears and reads interleaved with
events, the event queue at its depth (ev_pop credits).
"""

import random
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from lvsnic_tb import cycles, request, seed, start

B, A, EV_DEPTH = 4, 4, 8
NSLOT = 1 << (B + 3)
NACT = 1 << A


class TB:
    def __init__(self, dut):
        self.dut = dut
        dut.ev_valid.value = 0
        dut.host_req.value = 0
        self.lh = [0] * NSLOT
        self.pk = [0] * NACT
        self.by = [0] * NACT
        self.evq = []            # events pushed, not yet popped
        self.host_pending = None
        self.exp_lh, self.exp_cnt = [], []
        self.n_lh = self.n_cnt = self.n_ev = 0
        cocotb.start_soon(self.monitor())

    async def monitor(self):
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            await ReadOnly()
            if int(d.lh_rd_valid.value):
                assert self.exp_lh, "unexpected last_hit read result"
                e = self.exp_lh.pop(0)
                assert int(d.lh_rd_data.value) == e, f"last_hit {int(d.lh_rd_data.value):#x}, expected {e:#x}"
                self.n_lh += 1
            if int(d.cnt_rd_valid.value):
                assert self.exp_cnt, "unexpected counter read result"
                e = self.exp_cnt.pop(0)
                got = (int(d.cnt_rd_pkts.value), int(d.cnt_rd_bytes.value))
                assert got == e, f"counters {got}, expected {e}"
                self.n_cnt += 1
            busy = int(d.init_busy.value)
            if self.host_pending is not None and not busy:
                assert not int(d.ev_pop.value), "event taken in a host operation's cycle"
                self.host_op(*self.host_pending)
                self.host_pending = None
            if int(d.ev_pop.value):
                assert not busy and self.evq, "ev_pop during the sweep or with no event"
                act, tl, slot, ts = self.evq.pop(0)
                self.pk[act] += 1
                self.by[act] += tl
                self.lh[slot] = ts
                self.n_ev += 1
            if int(d.ev_valid.value):
                self.evq.append((int(d.ev_act.value), int(d.ev_tl.value), int(d.ev_slot.value), int(d.ev_ts.value)))
                assert len(self.evq) <= EV_DEPTH
            if int(d.host_ack.value):
                assert self.host_pending is None
                self.host_pending = (int(d.host_op.value), int(d.host_idx.value))

    def host_op(self, op, idx):
        slot, act = idx & (NSLOT - 1), idx & (NACT - 1)
        if op == 0:
            self.lh[slot] = 0
        elif op == 1:
            self.exp_lh.append(self.lh[slot])
        elif op == 2:
            self.pk[act] = self.by[act] = 0
        else:
            self.exp_cnt.append((self.pk[act], self.by[act]))

    async def host(self, op, idx):
        d = self.dut
        await request(d, d.host_req, d.host_ack, host_op=op, host_idx=idx)

    async def events(self, rng, n, p_idle, acts):
        """n events, back to back when p_idle = 0, within the queue's
        credit (EV_DEPTH outstanding)."""
        d = self.dut
        sent = 0
        while sent < n:
            await FallingEdge(d.clk)
            # credit: events pushed (or being pushed) and not popped
            if rng.random() >= p_idle and len(self.evq) + 1 <= EV_DEPTH - 1:
                d.ev_valid.value = 1
                d.ev_act.value = rng.choice(acts)
                d.ev_tl.value = rng.choice([28, 40, 1500, 65535, rng.getrandbits(16)])
                d.ev_slot.value = rng.randrange(NSLOT)
                d.ev_ts.value = rng.getrandbits(64)
                sent += 1
            else:
                d.ev_valid.value = 0
            await ReadOnly()
        await FallingEdge(d.clk)
        d.ev_valid.value = 0

    async def read_all(self):
        for s in range(NSLOT):
            await self.host(1, s)
        for a in range(NACT):
            await self.host(3, a)

    async def settle(self):
        for _ in range(2000):
            await cycles(self.dut, 1)
            if not self.evq and self.host_pending is None and not self.exp_lh and not self.exp_cnt:
                break
        await cycles(self.dut, 5)
        assert not self.evq and not self.exp_lh and not self.exp_cnt, "operations left over"


@cocotb.test()
async def sweep_and_counts(dut):
    """After reset every counter and last_hit reads 0 (the RAMs start random);
    events and host operations issued during the sweep wait for it."""
    tb = TB(dut)
    await start(dut, settle=0)
    rng = random.Random(seed(31))
    assert int(dut.init_busy.value)
    ev = cocotb.start_soon(tb.events(rng, 6, 0.0, [3]))
    await tb.host(3, 3)          # during the sweep
    await ev
    await tb.read_all()
    await tb.settle()
    assert tb.pk[3] == 6 and tb.n_cnt == NACT + 1 and tb.n_lh == NSLOT


@cocotb.test()
async def random_ops(dut):
    """Events at full rate on few actions (forwarding), random gaps on all,
    with clears and reads of both tables interleaved."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(32))
    await cycles(dut, 1 << max(A, B))
    for p_idle, acts in [(0.0, [5]), (0.0, [1, 2]), (0.3, list(range(NACT))), (0.0, [0, 0, 0, 9]),
                         (0.7, [4, 5, 6])]:
        ev = cocotb.start_soon(tb.events(rng, 150, p_idle, acts))
        while not ev.done():
            op = rng.choice([0, 1, 1, 2, 3, 3])
            idx = rng.randrange(1 << 7)
            if op >= 2:
                idx = rng.choice(acts + [rng.randrange(NACT)])
            await tb.host(op, idx)
            await cycles(dut, rng.choice([0, 0, 1, 3, 10]))
        await tb.settle()
    await tb.read_all()
    await tb.settle()
    assert tb.n_ev == 750 and tb.n_cnt > NACT + 50 and tb.n_lh > NSLOT + 50, (tb.n_ev, tb.n_cnt, tb.n_lh)
    assert any(tb.pk), "no counts survived the clears"


def test_stats():
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    run("stats", "lvsnic_stats", "test_stats", here,
        parameters={"FLOW_BUCKETS_LOG2": B, "ACTION_LOG2": A, "EV_DEPTH": EV_DEPTH})
