package sdur

import (
	"math"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocol/wire"
)

// Codec encodes S-DUR's peer messages and its client requests and answers for the network
// runtime: one tag byte, then (ids, counters and ballots as uvarints; partitions, node ids and
// counts as bounded uvarints; lists as a count then their elements)
//
//	ReadReq       tx, key, st, has st
//	ReadReply     value, version, st
//	SnapReq       (nothing)
//	SnapReply     m, s
//	CommitReq     tx, slices (partition, read keys, writes, st)
//	CommitReply   status (committed or aborted), reason
//	Submit        group, payload
//	Vote          tx, partition, commit
//	VoteQuery     tx
//	SnapAsk       m, prev
//	Report        m, partition, c, globals (tx, sc, partitions)
//	SnapPublish   m, s
//	Marker        m, partition, coordinator, prev
//	Terminate     tx, slice, partitions, coordinator, client, seq, submit time   (payloads)
//	AbortReq      tx, partitions, coordinator, client, seq, submit time
//	SnapBegin     m
//	SnapResume    m
//	Final         tx, commit
//	SnapDecided   m, s
//	Tick          to
//	Paxos         kind, group, ballot, slot, frontier, value (payloads), accepted (slot, ballot,
//	              decided, value)
//
// Decode checks every count against its limit before allocating and refuses a payload where
// none may be (a Paxos message inside a Submit), so a decoded message is always one Append could
// have produced.
var Codec protocol.Codec = wire.Codec{Protocol: "sdur", Write: write, Read: read}

// Limits of a decoded message.
const (
	maxPartitions = 1 << 12 // partitions of a deployment, and slices of a transaction
	maxNodes      = 1 << 20
	maxValue      = 1 << 12 // payloads in one Paxos value (batches hold at most batch_size)
	maxAccepted   = 1 << 16 // slots in one P1b
	maxGlobals    = 1 << 20 // globals in one REPORT
	maxReason     = 64      // an abort reason's bytes
)

const (
	tagReadReq byte = iota + 1
	tagReadReply
	tagSnapReq
	tagSnapReply
	tagCommitReq
	tagSubmit
	tagVote
	tagVoteQuery
	tagSnapAsk
	tagReport
	tagSnapPublish
	tagTerminate
	tagAbortReq
	tagFinal
	tagSnapDecided
	tagTick
	tagPaxos
	tagCommitReply
	tagMarker
	tagSnapBegin
	tagSnapResume
)

// write writes m's tag and fields to w, or reports that m is not S-DUR's.
func write(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *ReadReq:
		w.Byte(tagReadReq)
		w.ID(m.Tx)
		w.String("key", m.Key, wire.MaxKeyLen)
		w.Uvarint(m.St)
		w.Bool(m.HasSt)
	case *ReadReply:
		w.Byte(tagReadReply)
		w.Bytes("value", m.Value, wire.MaxValueLen)
		w.ID(m.Version)
		w.Uvarint(m.St)
	case *SnapReq:
		w.Byte(tagSnapReq)
	case *SnapReply:
		w.Byte(tagSnapReply)
		w.Uvarint(m.M)
		writeUints(w, m.S)
	case *CommitReq:
		w.Byte(tagCommitReq)
		w.ID(m.Tx)
		w.Count("slice count", len(m.Slices), maxPartitions)
		for _, s := range m.Slices {
			writeSlice(w, s)
		}
	case *CommitReply:
		if m.Status != txn.Committed && m.Status != txn.Aborted {
			return false
		}
		w.Byte(tagCommitReply)
		w.Bool(m.Status == txn.Committed)
		w.String("reason", string(m.Reason), maxReason)
	case *Submit:
		if m.Payload == nil {
			return false
		}
		w.Byte(tagSubmit)
		w.Int("group", m.Group, maxPartitions)
		return writePayload(w, m.Payload)
	case *Vote:
		w.Byte(tagVote)
		w.ID(m.Tx)
		w.Int("partition", m.Part, maxPartitions)
		w.Bool(m.Commit)
	case *VoteQuery:
		w.Byte(tagVoteQuery)
		w.ID(m.Tx)
	case *SnapAsk:
		w.Byte(tagSnapAsk)
		w.Uvarint(m.M)
		writeUints(w, m.Prev)
	case *Report:
		w.Byte(tagReport)
		w.Uvarint(m.M)
		w.Int("partition", m.Part, maxPartitions)
		w.Uvarint(m.C)
		w.Count("global count", len(m.L), maxGlobals)
		for _, g := range m.L {
			w.ID(g.Tx)
			w.Uvarint(g.SC)
			writeParts(w, g.Parts)
		}
	case *SnapPublish:
		w.Byte(tagSnapPublish)
		w.Uvarint(m.M)
		writeUints(w, m.S)
	case *Marker:
		w.Byte(tagMarker)
		w.Uvarint(m.M)
		w.Int("partition", m.Part, maxPartitions)
		w.Int("coordinator", int(m.Coord), maxNodes)
		writeUints(w, m.Prev)
	case *Paxos:
		w.Byte(tagPaxos)
		w.Byte(byte(m.Kind))
		w.Int("group", m.Group, maxPartitions)
		w.Uvarint(m.Ballot)
		w.Uvarint(m.Inst)
		w.Uvarint(m.Frontier)
		if !writeValue(w, m.Value) {
			return false
		}
		w.Count("accepted count", len(m.Accepted), maxAccepted)
		for _, a := range m.Accepted {
			w.Uvarint(a.Inst)
			w.Uvarint(a.Ballot)
			w.Bool(a.Decided)
			if !writeValue(w, a.Value) {
				return false
			}
		}
	default:
		return writePayload(w, m)
	}
	return true
}

// writePayload writes one broadcast payload, or reports that m is not one.
func writePayload(w *wire.Writer, m protocol.Message) bool {
	switch m := m.(type) {
	case *Terminate:
		w.Byte(tagTerminate)
		w.ID(m.Tx)
		writeSlice(w, m.Slice)
		writeParts(w, m.Parts)
		writeAnswerTo(w, m.Coord, m.Client, m.Seq)
		w.Varint(m.SubmitUs)
	case *AbortReq:
		w.Byte(tagAbortReq)
		w.ID(m.Tx)
		writeParts(w, m.Parts)
		writeAnswerTo(w, m.Coord, m.Client, m.Seq)
		w.Varint(m.SubmitUs)
	case *SnapBegin:
		w.Byte(tagSnapBegin)
		w.Uvarint(m.M)
	case *SnapResume:
		w.Byte(tagSnapResume)
		w.Uvarint(m.M)
	case *Final:
		w.Byte(tagFinal)
		w.ID(m.Tx)
		w.Bool(m.Commit)
	case *SnapDecided:
		w.Byte(tagSnapDecided)
		w.Uvarint(m.M)
		writeUints(w, m.S)
	case *Tick:
		w.Byte(tagTick)
		w.Uvarint(m.To)
	default:
		return false
	}
	return true
}

// writeAnswerTo writes who answers a transaction's client: the coordinator, the client and the
// request's sequence number.
func writeAnswerTo(w *wire.Writer, coord protocol.NodeID, client txn.ClientID, seq uint64) {
	w.Int("coordinator", int(coord), maxNodes)
	w.Int("client", int(client), math.MaxUint32)
	w.Uvarint(seq)
}

func writeValue(w *wire.Writer, v []Payload) bool {
	w.Count("value length", len(v), maxValue)
	for _, p := range v {
		if p == nil || !writePayload(w, p) {
			return false
		}
	}
	return true
}

func writeSlice(w *wire.Writer, s Slice) {
	w.Int("partition", s.Part, maxPartitions)
	w.Keys(s.RS)
	w.Writes(s.WS)
	w.Uvarint(s.St)
}

func writeParts(w *wire.Writer, parts []int) {
	w.Count("partition count", len(parts), maxPartitions)
	for _, p := range parts {
		w.Int("partition", p, maxPartitions)
	}
}

func writeUints(w *wire.Writer, v []uint64) {
	w.Count("counter count", len(v), maxPartitions)
	for _, x := range v {
		w.Uvarint(x)
	}
}

// read reads one message.
func read(r *wire.Reader) protocol.Message {
	switch tag := r.Byte("tag"); tag {
	case tagReadReq:
		return &ReadReq{Tx: r.ID("tx"), Key: r.String("key", wire.MaxKeyLen), St: r.Uvarint("st"), HasSt: r.Bool("has st")}
	case tagReadReply:
		return &ReadReply{Value: r.Bytes("value", wire.MaxValueLen), Version: r.ID("version"), St: r.Uvarint("st")}
	case tagSnapReq:
		return &SnapReq{}
	case tagSnapReply:
		return &SnapReply{M: r.Uvarint("m"), S: readUints(r)}
	case tagCommitReq:
		m := &CommitReq{Tx: r.ID("tx")}
		n := r.Count("slice count", maxPartitions, 4)
		if n > 0 {
			m.Slices = make([]Slice, n)
			for i := range m.Slices {
				m.Slices[i] = readSlice(r)
			}
		}
		return m
	case tagCommitReply:
		m := &CommitReply{Status: txn.Aborted}
		if r.Bool("committed") {
			m.Status = txn.Committed
		}
		m.Reason = txn.AbortReason(r.String("reason", maxReason))
		return m
	case tagSubmit:
		return &Submit{Group: r.Int("group", maxPartitions), Payload: readPayload(r)}
	case tagVote:
		return &Vote{Tx: r.ID("tx"), Part: r.Int("partition", maxPartitions), Commit: r.Bool("commit")}
	case tagVoteQuery:
		return &VoteQuery{Tx: r.ID("tx")}
	case tagSnapAsk:
		return &SnapAsk{M: r.Uvarint("m"), Prev: readUints(r)}
	case tagReport:
		m := &Report{M: r.Uvarint("m"), Part: r.Int("partition", maxPartitions), C: r.Uvarint("c")}
		n := r.Count("global count", maxGlobals, 3)
		if n > 0 {
			m.L = make([]GlobalCommit, n)
			for i := range m.L {
				m.L[i] = GlobalCommit{Tx: r.ID("tx"), SC: r.Uvarint("sc"), Parts: readParts(r)}
			}
		}
		return m
	case tagSnapPublish:
		return &SnapPublish{M: r.Uvarint("m"), S: readUints(r)}
	case tagMarker:
		return &Marker{M: r.Uvarint("m"), Part: r.Int("partition", maxPartitions), Coord: protocol.NodeID(r.Int("coordinator", maxNodes)), Prev: readUints(r)}
	case tagPaxos:
		m := &Paxos{Kind: PaxosKind(r.Byte("kind")), Group: r.Int("group", maxPartitions), Ballot: r.Uvarint("ballot"),
			Inst: r.Uvarint("slot"), Frontier: r.Uvarint("frontier"), Value: readValue(r)}
		if m.Kind < P1a || m.Kind > Decide {
			r.Fail("paxos kind", "unknown kind %d", m.Kind)
		}
		n := r.Count("accepted count", maxAccepted, 4)
		if n > 0 {
			m.Accepted = make([]Accepted, n)
			for i := range m.Accepted {
				m.Accepted[i] = Accepted{Inst: r.Uvarint("slot"), Ballot: r.Uvarint("ballot"), Decided: r.Bool("decided"), Value: readValue(r)}
			}
		}
		return m
	default:
		return readPayloadTagged(r, tag)
	}
}

// readPayload reads one broadcast payload.
func readPayload(r *wire.Reader) Payload { return readPayloadTagged(r, r.Byte("payload tag")) }

func readPayloadTagged(r *wire.Reader, tag byte) Payload {
	switch tag {
	case tagTerminate:
		return &Terminate{Tx: r.ID("tx"), Slice: readSlice(r), Parts: readParts(r), Coord: protocol.NodeID(r.Int("coordinator", maxNodes)),
			Client: clientID(r), Seq: r.Uvarint("seq"), SubmitUs: r.Varint("submit time")}
	case tagAbortReq:
		return &AbortReq{Tx: r.ID("tx"), Parts: readParts(r), Coord: protocol.NodeID(r.Int("coordinator", maxNodes)),
			Client: clientID(r), Seq: r.Uvarint("seq"), SubmitUs: r.Varint("submit time")}
	case tagSnapBegin:
		return &SnapBegin{M: r.Uvarint("m")}
	case tagSnapResume:
		return &SnapResume{M: r.Uvarint("m")}
	case tagFinal:
		return &Final{Tx: r.ID("tx"), Commit: r.Bool("commit")}
	case tagSnapDecided:
		return &SnapDecided{M: r.Uvarint("m"), S: readUints(r)}
	case tagTick:
		return &Tick{To: r.Uvarint("to")}
	}
	r.Fail("tag", "unknown tag %d", tag)
	return nil
}

func clientID(r *wire.Reader) txn.ClientID { return txn.ClientID(r.Int("client", math.MaxUint32)) }

func readValue(r *wire.Reader) []Payload {
	n := r.Count("value length", maxValue, 2)
	if n == 0 {
		return nil
	}
	v := make([]Payload, n)
	for i := range v {
		v[i] = readPayload(r)
	}
	return v
}

func readSlice(r *wire.Reader) Slice {
	return Slice{Part: r.Int("partition", maxPartitions), RS: r.Keys(), WS: r.Writes(), St: r.Uvarint("st")}
}

func readParts(r *wire.Reader) []int {
	n := r.Count("partition count", maxPartitions, 1)
	if n == 0 {
		return nil
	}
	parts := make([]int, n)
	for i := range parts {
		parts[i] = r.Int("partition", maxPartitions)
	}
	return parts
}

func readUints(r *wire.Reader) []uint64 {
	n := r.Count("counter count", maxPartitions, 1)
	if n == 0 {
		return nil
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uvarint("counter")
	}
	return v
}
