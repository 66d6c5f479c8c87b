package geo

import (
	"fmt"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
	"github.com/meridian-kv/meridian/ml/train"
	"github.com/meridian-kv/meridian/protocol"
)

// Timers of a source.
const (
	timerCollect protocol.TimerID = 1 // the next batch is complete
	timerResend  protocol.TimerID = 2 // resend what is not acknowledged
)

// SourceConfig is what a collection site does.
type SourceConfig struct {
	// Index is the source's number, 0-based (node Index+1).
	Index int
	// Share is the samples the site collects, in order.
	Share *dataset.Dataset
	// BatchSamples is how many samples make a batch.
	BatchSamples int
	// CollectUs is how long the site takes to collect one batch: batch k is cut, planned and
	// shipped CollectUs·k after the start (0: every batch at once).
	CollectUs int64
	// ResendUs is how long a shipped batch may go unacknowledged before it is sent again.
	ResendUs int64
}

// Source is a collection site (a protocol.Replica): it cuts its share into batches as they are
// collected, plans each (Alg. 12) and ships it to the centre, resending every unacknowledged
// batch each ResendUs until the centre acknowledges it.
type Source struct {
	cfg     SourceConfig
	env     protocol.Env
	count   int      // batches in all
	shipped []*Batch // cut and planned so far, by seq-1
	acked   []bool
	unacked int
	err     error
}

// NewSource returns the collection site cfg describes, driven by env.
func NewSource(cfg SourceConfig, env protocol.Env) (*Source, error) {
	if cfg.Share == nil || cfg.Share.Len() == 0 || cfg.BatchSamples < 1 || cfg.ResendUs <= 0 || cfg.CollectUs < 0 {
		return nil, fmt.Errorf("geo: source %d needs samples, a batch size and a resend interval", cfg.Index)
	}
	return &Source{cfg: cfg, env: env, count: batchCount(cfg.Share.Len(), cfg.BatchSamples)}, nil
}

// Start begins collecting.
func (s *Source) Start() {
	s.collect()
	s.env.SetTimer(s.cfg.ResendUs, timerResend)
}

// collect cuts, plans and ships the next batch, and every batch after it that is already
// complete (all of them without a collection time).
func (s *Source) collect() {
	for len(s.shipped) < s.count {
		b, err := batchOf(s.cfg.Share, s.cfg.Index, uint64(len(s.shipped)+1), s.cfg.BatchSamples)
		if err != nil {
			s.err = err // cannot happen for a share that loaded; reported by Err
			return
		}
		s.shipped, s.acked = append(s.shipped, b), append(s.acked, false)
		s.unacked++
		s.env.Send(CentreNode, b)
		if s.cfg.CollectUs > 0 {
			if len(s.shipped) < s.count {
				s.env.SetTimer(s.cfg.CollectUs, timerCollect)
			}
			return
		}
	}
}

// HandleMessage takes the centre's acknowledgements; anything else is ignored.
func (s *Source) HandleMessage(from protocol.NodeID, m protocol.Message) {
	a, ok := m.(*Ack)
	if !ok || from != CentreNode || a.Source != s.cfg.Index || a.Seq < 1 || a.Seq > uint64(len(s.shipped)) || s.acked[a.Seq-1] {
		return
	}
	s.acked[a.Seq-1] = true
	s.unacked--
}

// HandleRequest ignores client requests: a source has no clients.
func (s *Source) HandleRequest(protocol.Request) {}

// HandleTimer collects the next batch or resends the unacknowledged ones.
func (s *Source) HandleTimer(id protocol.TimerID) {
	switch id {
	case timerCollect:
		s.collect()
	case timerResend:
		for i, b := range s.shipped {
			if !s.acked[i] {
				s.env.Send(CentreNode, b)
			}
		}
		if !s.Done() {
			s.env.SetTimer(s.cfg.ResendUs, timerResend)
		}
	}
}

// Done reports whether every batch is shipped and acknowledged.
func (s *Source) Done() bool { return len(s.shipped) == s.count && s.unacked == 0 }

// Acked returns how many of the source's batches the centre has acknowledged.
func (s *Source) Acked() int { return len(s.shipped) - s.unacked }

// Err returns why the source stopped early, if it did.
func (s *Source) Err() error { return s.err }

// maxAhead bounds how far ahead of its turn the centre keeps a source's batches (the source
// resends the rest).
const maxAhead = 64

// CentreConfig is what the central site does.
type CentreConfig struct {
	// Sources is the number of collection sites.
	Sources int
	// Log, if not nil, makes an admitted batch durable before it is acknowledged (a real
	// process appends it to its admission log); an error leaves the batch unacknowledged, and
	// unadmitted, to be resent.
	Log func(b *Batch) error
}

// Centre is the central site's admission (a protocol.Replica): it keeps the batches that arrive,
// admits them in the round-robin order of the package comment, transposing each plan onto
// everything admitted before (cop.Central), and acknowledges each once admitted and logged.
// Complete reports when every source's last batch is admitted; TrainingData is then the
// transposed plan over the admitted samples.
type Centre struct {
	cfg      CentreConfig
	env      protocol.Env
	central  cop.Central
	data     *dataset.Dataset
	admitted []*Batch // the admission log, in order
	next     []uint64 // per source: the next batch to admit
	done     []bool   // per source: its last batch is admitted
	pending  []map[uint64]*Batch
	turn     int
	// CompletedUs is env's time when the last batch was admitted (-1 before).
	CompletedUs int64
}

// NewCentre returns the central site cfg describes, driven by env.
func NewCentre(cfg CentreConfig, env protocol.Env) (*Centre, error) {
	if cfg.Sources < 1 || cfg.Sources > maxSources {
		return nil, fmt.Errorf("geo: %d sources (want 1 to %d)", cfg.Sources, maxSources)
	}
	c := &Centre{cfg: cfg, env: env}
	c.reset()
	return c, nil
}

// reset empties the centre's state.
func (c *Centre) reset() {
	c.central, c.data, c.admitted, c.turn, c.CompletedUs = cop.Central{}, dataset.New("admitted"), nil, 0, -1
	c.next, c.done, c.pending = make([]uint64, c.cfg.Sources), make([]bool, c.cfg.Sources), make([]map[uint64]*Batch, c.cfg.Sources)
	for s := range c.next {
		c.next[s], c.pending[s] = 1, map[uint64]*Batch{}
	}
}

// Start does nothing: the centre waits for batches.
func (c *Centre) Start() {}

// HandleRequest ignores client requests.
func (c *Centre) HandleRequest(protocol.Request) {}

// HandleTimer ignores timers: the centre sets none.
func (c *Centre) HandleTimer(protocol.TimerID) {}

// HandleMessage takes a batch: one already admitted is acknowledged again (its first
// acknowledgement may have been lost), one ahead of its turn waits, and then every batch whose
// turn has come is admitted. A batch not from its own source's node is ignored.
func (c *Centre) HandleMessage(from protocol.NodeID, m protocol.Message) {
	b, ok := m.(*Batch)
	if !ok || b.Source < 0 || b.Source >= c.cfg.Sources || from != SourceNode(b.Source) || b.Seq < 1 || b.Data == nil || b.Plan == nil {
		return
	}
	switch s := b.Source; {
	case b.Seq < c.next[s] || c.done[s]:
		c.env.Send(from, &Ack{Source: s, Seq: b.Seq})
		return
	case b.Seq < c.next[s]+maxAhead:
		c.pending[s][b.Seq] = b
	}
	c.admitReady()
}

// admitReady admits batches while the one whose turn it is has arrived.
func (c *Centre) admitReady() {
	for !c.Complete() {
		s := c.turn
		if c.done[s] {
			c.turn = (s + 1) % c.cfg.Sources
			continue
		}
		b := c.pending[s][c.next[s]]
		if b == nil {
			return
		}
		delete(c.pending[s], b.Seq)
		if c.cfg.Log != nil {
			if err := c.cfg.Log(b); err != nil {
				return // not durable: not admitted; the source resends it
			}
		}
		if err := c.admit(b); err != nil {
			return // malformed: dropped, unacknowledged
		}
		c.env.Send(SourceNode(s), &Ack{Source: s, Seq: b.Seq})
	}
}

// admit admits b, whose turn it is, and moves the turn on.
func (c *Centre) admit(b *Batch) error {
	if _, err := c.central.Admit(b.Plan); err != nil {
		return err
	}
	c.data.AppendAll(b.Data)
	c.admitted = append(c.admitted, b)
	s := b.Source
	c.next[s]++
	c.done[s] = b.Last
	c.turn = (s + 1) % c.cfg.Sources
	if c.Complete() {
		c.CompletedUs = c.env.NowUs()
	}
	return nil
}

// Recover rebuilds the centre from its admission log (the batches it admitted, in order), as a
// restarted central site does before it takes messages again.
func (c *Centre) Recover(log []*Batch) error {
	c.reset()
	for _, b := range log {
		if b.Source < 0 || b.Source >= c.cfg.Sources || b.Source != c.turnSource() || b.Seq != c.next[b.Source] {
			return fmt.Errorf("geo: the admission log has batch %d of source %d out of turn", b.Seq, b.Source)
		}
		if err := c.admit(b); err != nil {
			return err
		}
	}
	return nil
}

// turnSource returns the source whose batch is admitted next.
func (c *Centre) turnSource() int {
	for range c.cfg.Sources {
		if !c.done[c.turn] {
			break
		}
		c.turn = (c.turn + 1) % c.cfg.Sources
	}
	return c.turn
}

// Restart is a restart of the central site with its admission log: the batches waiting for
// their turn are lost, the admitted ones recovered.
func (c *Centre) Restart() error {
	return c.Recover(c.admitted)
}

// Admitted returns the admission log: the batches admitted, in order.
func (c *Centre) Admitted() []*Batch { return c.admitted }

// Complete reports whether every source's last batch is admitted.
func (c *Centre) Complete() bool {
	for _, d := range c.done {
		if !d {
			return false
		}
	}
	return true
}

// TrainingData returns the admitted samples with their transposed plan, to train on (accuracy
// is measured on the training set).
func (c *Centre) TrainingData() (*train.Data, error) {
	if c.data.Len() == 0 {
		return nil, fmt.Errorf("geo: nothing admitted")
	}
	plan := c.central.Plan()
	return &train.Data{Train: c.data, Test: c.data, Txns: plan.Txns(), Plan: plan,
		Planning: train.Planning{Mode: train.Sources, Sources: c.cfg.Sources}}, nil
}
