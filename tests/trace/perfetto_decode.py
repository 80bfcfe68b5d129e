"""A minimal decoder of the Perfetto protobuf trace that `pacer trace export
--format perfetto` writes: protobuf wire format by hand (no protobuf
package), then the Trace -> TracePacket -> TrackEvent/TrackDescriptor/
InternedData fields ui.perfetto.dev reads. Strict: anything malformed
raises ValueError."""


def varint(buf, pos):
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("varint runs past the end")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 64 bits")


def fields(buf):
    """Yields (field number, wire type, value) of one message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 2:
            n, pos = varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("length-delimited field runs past the end")
            value = bytes(buf[pos:pos + n])
            pos += n
        elif wire == 1:
            value = buf[pos:pos + 8]
            pos += 8
        elif wire == 5:
            value = buf[pos:pos + 4]
            pos += 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield field, wire, value


def decode(data):
    """Returns (tracks, slices): tracks maps uuid -> dict(pid, tid, name);
    slices maps a thread track uuid -> list of (begin_ns, end_ns, depth,
    name) in begin order. Checks nesting and interning on the way."""
    tracks = {}
    interned = {}  # seq -> {iid: name}
    open_stacks = {}
    slices = {}
    for field, wire, packet in fields(data):
        if field != 1 or wire != 2:
            raise ValueError("Trace holds only packets (field 1)")
        pk = {}
        for f, w, v in fields(packet):
            pk.setdefault(f, []).append(v)
        seq = pk.get(10, [0])[0]
        flags = pk.get(13, [0])[0]
        if flags & 1:
            interned[seq] = {}
        for idata in pk.get(12, []):
            for f, w, v in fields(idata):
                if f == 2:
                    en = dict((ff, vv) for ff, ww, vv in fields(v))
                    interned.setdefault(seq, {})[en[1]] = en[2].decode()
        for td in pk.get(60, []):
            d = {}
            for f, w, v in fields(td):
                if f in (3, 4):
                    sub = dict((ff, vv) for ff, ww, vv in fields(v))
                    d["pid"] = sub.get(1)
                    if f == 4:
                        d["tid"] = sub.get(2)
                        d["name"] = sub.get(5, b"").decode()
                else:
                    d[f] = v
            tracks[d[1]] = d
        for te in pk.get(11, []):
            ev = dict((f, v) for f, w, v in fields(te))
            ts = pk[8][0]
            uuid = ev[11]
            if uuid not in tracks:
                raise ValueError("event on undescribed track %x" % uuid)
            stack = open_stacks.setdefault(uuid, [])
            out = slices.setdefault(uuid, [])
            if ev[9] == 1:
                if 23 in ev:
                    name = ev[23].decode()
                else:
                    if flags & 2 == 0:
                        raise ValueError("interned name without SEQ_NEEDS_INCREMENTAL_STATE")
                    name = interned.get(seq, {}).get(ev[10])
                    if name is None:
                        raise ValueError("name_iid %d not interned on sequence %d" % (ev[10], seq))
                if stack and ts < out[stack[-1]][0]:
                    raise ValueError("child begins before its parent")
                out.append([ts, None, len(stack), name])
                stack.append(len(out) - 1)
            elif ev[9] == 2:
                if not stack:
                    raise ValueError("slice end without a begin on track %x" % uuid)
                s = out[stack.pop()]
                if ts < s[0]:
                    raise ValueError("slice ends before it begins")
                s[1] = ts
            else:
                raise ValueError("unexpected track event type %d" % ev[9])
    for uuid, stack in open_stacks.items():
        if stack:
            raise ValueError("%d slices never ended on track %x" % (len(stack), uuid))
    return tracks, slices


def call_tree(slices):
    """{path tuple: count} of one track's slices."""
    counts = {}
    stack = []
    for begin, end, depth, name in slices:
        del stack[depth:]
        stack.append(name)
        key = tuple(stack)
        counts[key] = counts.get(key, 0) + 1
    return counts
