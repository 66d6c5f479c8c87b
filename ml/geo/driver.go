package geo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/store"
	"github.com/meridian-kv/meridian/protocol/wire"
	"github.com/meridian-kv/meridian/topology"
)

// Driver runs one site's replica (a Source or a Centre) as a real process: the real clock and
// timers, one event-loop goroutine that owns the replica, and TCP connections to the other
// sites (wire frames: a hello naming the sender, then messages in Codec), each message held
// back by the topology's one-way delay between the two sites, so that a single machine
// emulates the WAN of Fig. 6.1. A message that cannot be sent is dropped: the sources resend.
type Driver struct {
	self    protocol.NodeID
	addrs   []string // node -> listen address
	topo    *topology.Topology
	start   time.Time
	rand    *rand.Rand
	replica protocol.Replica
	inputs  chan func()
	ln      net.Listener

	mu    sync.Mutex
	peers map[protocol.NodeID]*peerLink
}

// peerLink is the outgoing side of one connection: messages wait in a queue until their
// emulated delivery time, in order.
type peerLink struct {
	queue chan delayed
}

type delayed struct {
	at    time.Time
	frame []byte
}

// NewDriver returns the driver of node self, listening at addrs[self]; addrs holds every node's
// address (the centre first, then the sources) and topo their datacenters (node i in topo's
// datacenter i). The replica is made by newReplica with the driver's environment.
func NewDriver(self protocol.NodeID, addrs []string, topo *topology.Topology, newReplica func(protocol.Env) (protocol.Replica, error)) (*Driver, error) {
	if int(self) < 0 || int(self) >= len(addrs) || len(addrs) > topo.N() {
		return nil, fmt.Errorf("geo: node %d of %d addresses on %d datacenters", self, len(addrs), topo.N())
	}
	d := &Driver{self: self, addrs: addrs, topo: topo, start: time.Now(), rand: rand.New(rand.NewPCG(uint64(self), 1)),
		inputs: make(chan func(), 1024), peers: map[protocol.NodeID]*peerLink{}}
	r, err := newReplica(d)
	if err != nil {
		return nil, err
	}
	d.replica = r
	return d, nil
}

// Run listens, starts the replica and runs the event loop until ctx ends or done (called on the
// loop after every input) reports true.
func (d *Driver) Run(ctx context.Context, done func() bool) error {
	ln, err := net.Listen("tcp", d.addrs[d.self])
	if err != nil {
		return err
	}
	d.ln = ln
	defer ln.Close()
	go d.accept(ctx)
	d.replica.Start()
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case f := <-d.inputs:
			f()
		}
	}
	return nil
}

// Do runs f on the event loop (for a caller that must read the replica's state).
func (d *Driver) Do(f func()) {
	ran := make(chan struct{})
	d.inputs <- func() { f(); close(ran) }
	<-ran
}

// accept takes connections and reads their frames into the loop.
func (d *Driver) accept(ctx context.Context) {
	for {
		conn, err := d.ln.Accept()
		if err != nil {
			return
		}
		go d.read(ctx, conn)
	}
}

// read reads one connection: a hello with the sender's node, then messages.
func (d *Driver) read(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	kind, hello, err := wire.ReadFrame(r, 0)
	if err != nil || kind != wire.KindHello {
		return
	}
	id, n := binary.Uvarint(hello)
	if n <= 0 || n != len(hello) || id >= uint64(len(d.addrs)) {
		return
	}
	from := protocol.NodeID(id)
	for {
		kind, payload, err := wire.ReadFrame(r, 0)
		if err != nil || kind != wire.KindMessage {
			return
		}
		m, err := Codec.Decode(payload)
		if err != nil {
			continue // malformed: ignored
		}
		select {
		case d.inputs <- func() { d.replica.HandleMessage(from, m) }:
		case <-ctx.Done():
			return
		}
	}
}

// NowUs is the time since the driver started, in microseconds.
func (d *Driver) NowUs() int64 { return time.Since(d.start).Microseconds() }

// Rand is the replica's source of randomness.
func (d *Driver) Rand() *rand.Rand { return d.rand }

// Reply ignores replies: the sites have no clients.
func (d *Driver) Reply(protocol.Reply) {}

// Store returns nil: the sites keep no key-value data.
func (d *Driver) Store() *store.Store { return nil }

// SetTimer delivers the timer to the replica on the loop after afterUs.
func (d *Driver) SetTimer(afterUs int64, id protocol.TimerID) {
	time.AfterFunc(time.Duration(afterUs)*time.Microsecond, func() { d.inputs <- func() { d.replica.HandleTimer(id) } })
}

// Send encodes m and queues it for node to, to leave after the link's one-way delay.
func (d *Driver) Send(to protocol.NodeID, m protocol.Message) {
	if int(to) < 0 || int(to) >= len(d.addrs) || to == d.self {
		return
	}
	payload, err := Codec.Append(nil, m)
	if err != nil {
		return
	}
	var frame bytes.Buffer
	if wire.WriteFrame(&frame, wire.KindMessage, payload) != nil {
		return
	}
	oneWay := time.Duration(d.topo.RTTMs[d.self][to] / 2 * float64(time.Millisecond))
	d.mu.Lock()
	link := d.peers[to]
	if link == nil {
		link = &peerLink{queue: make(chan delayed, 4096)}
		d.peers[to] = link
		go d.write(to, link)
	}
	d.mu.Unlock()
	select {
	case link.queue <- delayed{at: time.Now().Add(oneWay), frame: frame.Bytes()}:
	default: // the link is backed up: dropped, to be resent
	}
}

// write sends a link's queued frames at their delivery times, dialling (again) as needed.
func (d *Driver) write(to protocol.NodeID, link *peerLink) {
	var conn net.Conn
	for m := range link.queue {
		time.Sleep(time.Until(m.at))
		if conn == nil {
			c, err := net.DialTimeout("tcp", d.addrs[to], time.Second)
			if err != nil {
				continue // dropped: the peer is down
			}
			hello := binary.AppendUvarint(nil, uint64(d.self))
			if wire.WriteFrame(c, wire.KindHello, hello) != nil {
				c.Close()
				continue
			}
			conn = c
		}
		if _, err := conn.Write(m.frame); err != nil {
			conn.Close()
			conn = nil
		}
	}
}

// FileLog is a central site's admission log: every admitted batch, encoded, appended to a file
// and synced before the batch is acknowledged.
type FileLog struct {
	f *os.File
}

// OpenFileLog opens (or creates) the admission log in dir and returns the batches it holds, in
// order. A torn last record (a crash while appending) is cut off.
func OpenFileLog(dir string) (*FileLog, []*Batch, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "admitted.log")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	var batches []*Batch
	r := bufio.NewReader(bytes.NewReader(data))
	good := 0
	for {
		kind, payload, err := wire.ReadFrame(r, 0)
		if err != nil {
			break // io.EOF, or a torn record
		}
		m, err := Codec.Decode(payload)
		b, ok := m.(*Batch)
		if err != nil || kind != wire.KindMessage || !ok {
			break
		}
		batches = append(batches, b)
		good += 5 + len(payload)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &FileLog{f: f}, batches, nil
}

// Append makes b durable.
func (l *FileLog) Append(b *Batch) error {
	payload, err := Codec.Append(nil, b)
	if err != nil {
		return err
	}
	if err := wire.WriteFrame(l.f, wire.KindMessage, payload); err != nil {
		return err
	}
	return l.f.Sync()
}

// Close closes the log.
func (l *FileLog) Close() error { return l.f.Close() }

// SaveCheckpoint writes the parameters after epoch to dir/checkpoint, atomically (a temporary
// file, synced, renamed over the old one).
func SaveCheckpoint(dir string, epoch int, params []float64) error {
	buf := binary.AppendUvarint(nil, uint64(epoch))
	buf = binary.AppendUvarint(buf, uint64(len(params)))
	for _, v := range params {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	tmp := filepath.Join(dir, "checkpoint.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "checkpoint"))
}

// LoadCheckpoint reads dir/checkpoint: the epochs finished and the parameters after them (0 and
// nil if there is none).
func LoadCheckpoint(dir string) (epoch int, params []float64, err error) {
	data, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	e, n := binary.Uvarint(data)
	count, m := uint64(0), 0
	if n > 0 {
		count, m = binary.Uvarint(data[n:])
	}
	if n <= 0 || m <= 0 || e > math.MaxInt32 || uint64(len(data)-n-m) != 8*count {
		return 0, nil, fmt.Errorf("geo: malformed checkpoint in %s", dir)
	}
	params = make([]float64, count)
	for i := range params {
		params[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[n+m+8*i:]))
	}
	return int(e), params, nil
}
