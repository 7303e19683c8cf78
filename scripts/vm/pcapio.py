"""Little-endian pcap files as the matrix scripts (matrix.py,
matrix_fixture.py) read and write them: records (timestamp in ns, frame
bytes, original length); written with nanosecond timestamps."""
import struct
import sys


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0xA1B23C4D:
        scale = 1
    elif magic == 0xA1B2C3D4:
        scale = 1000
    else:
        sys.exit("%s: not a little-endian pcap" % path)
    recs, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        recs.append((sec * 1_000_000_000 + frac * scale, data[off + 16:off + 16 + incl], orig))
        off += 16 + incl
    return recs


def write_pcap(path, recs):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for ts, frame, orig in recs:
            f.write(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, len(frame), orig))
            f.write(frame)
