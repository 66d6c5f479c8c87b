package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/meridian-kv/meridian/protocol/txn"
)

// The JSON Lines format is a contract with external checkers; field order is part of it.
//
//	{"id":"t3.1","dc":"V","client":"V/3","status":"committed","start_us":0,"end_us":0,"reads":[{"key":"k1","writer":"t1.7"}],"writes":["k1","k9"],"attempt":1,"first":"t3.1"}
//	{"id":"t3.2","dc":"V","client":"V/3","status":"aborted","reason":"stale-read","start_us":5,"end_us":9,"reads":[{"key":"k2","writer":null}],"writes":[],"attempt":1,"first":"t3.2"}
//	{"version_order":{"k1":["t1.7","t3.1"],"k9":["t3.1"]}}
//
// One line per transaction, then at most one version_order line, which must be last.

// jsonTxn is one transaction line. Its field order is the wire order.
type jsonTxn struct {
	ID      string     `json:"id"`
	DC      string     `json:"dc"`
	Client  string     `json:"client"`
	Status  string     `json:"status"`
	Reason  *string    `json:"reason,omitempty"` // present exactly for aborted transactions
	StartUs int64      `json:"start_us"`
	EndUs   int64      `json:"end_us"`
	Reads   []jsonRead `json:"reads"`
	Writes  []string   `json:"writes"`
	// Attempt and First are optional on input (1 and the transaction's own id), for files
	// written before retries existed.
	Attempt int    `json:"attempt,omitzero"`
	First   string `json:"first,omitzero"`
	// Snapshot is present (true) only for snapshot read-only transactions.
	Snapshot bool `json:"snapshot,omitzero"`
}

type jsonRead struct {
	Key    string   `json:"key"`
	Writer writerID `json:"writer"`
}

// writerID is a read's version: null for the initial version (txn.None), else the writer's id.
// present records whether the field occurred at all on input, so that a line that forgets
// "writer" is rejected instead of silently reading the initial version.
type writerID struct {
	id      txn.ID
	present bool
}

// MarshalJSON writes null for txn.None and the quoted id otherwise (ids are ASCII).
func (w writerID) MarshalJSON() ([]byte, error) {
	if w.id == txn.None {
		return []byte("null"), nil
	}
	return []byte(`"` + w.id.String() + `"`), nil
}

// UnmarshalJSON accepts null or an id string. encoding/json calls it for null too.
func (w *writerID) UnmarshalJSON(b []byte) error {
	w.present = true
	if string(b) == "null" {
		w.id = txn.None
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("writer must be null or a transaction id string: %w", err)
	}
	id, err := txn.ParseID(s)
	w.id = id
	return err
}

// jsonLine is what any input line may hold: a transaction or the version order.
type jsonLine struct {
	jsonTxn
	VersionOrder map[string][]string `json:"version_order"`
}

type jsonVersionOrder struct {
	VersionOrder map[string][]string `json:"version_order"`
}

// WriteJSONL writes h as JSON Lines (docs/HISTORY.md): one line per transaction in h.Txns order,
// then one version_order line with each key's installed order at the first replica of h.Replicas
// that holds the key (keys sorted): the first datacenter's replica under full replication, the
// partition that owns the key in a partitioned store. One order per key is written: external
// checkers want a single version order, and replica convergence is checked in memory (package
// checker). If h has no replicas the
// version_order line is omitted, and ReadJSONL of the output returns a History without replicas.
// Keys must be valid UTF-8 to round-trip.
func WriteJSONL(w io.Writer, h *History) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	reads := []jsonRead{} // reused: the encoder is done with it before the next line
	for i := range h.Txns {
		t := &h.Txns[i]
		if t.ID == txn.None {
			return fmt.Errorf("history: transaction %d has id txn.None, which names the initial version", i)
		}
		line := jsonTxn{
			ID:       t.ID.String(),
			DC:       t.DC,
			Client:   t.Client,
			Status:   t.Status.String(),
			StartUs:  t.StartUs,
			EndUs:    t.EndUs,
			Writes:   t.Writes,
			Attempt:  max(t.Attempt, 1),
			First:    t.ID.String(),
			Snapshot: t.Snapshot,
		}
		if t.First != txn.None {
			line.First = t.First.String()
		}
		switch t.Status {
		case txn.Committed, txn.Unknown:
		case txn.Aborted:
			reason := string(t.Reason)
			line.Reason = &reason
		default:
			return fmt.Errorf("history: transaction %v has invalid status %d", t.ID, t.Status)
		}
		reads = reads[:0]
		for _, r := range t.Reads {
			reads = append(reads, jsonRead{Key: r.Key, Writer: writerID{id: r.Version}})
		}
		line.Reads = reads
		if line.Writes == nil {
			line.Writes = []string{}
		}
		if err := enc.Encode(&line); err != nil {
			return fmt.Errorf("history: writing transaction %v: %w", t.ID, err)
		}
	}
	if len(h.Replicas) > 0 {
		// Each key's order is that of the first replica holding the key: the first datacenter's
		// replica (full replication) or the partition of the first datacenter that owns it.
		vo := jsonVersionOrder{VersionOrder: make(map[string][]string, len(h.Replicas[0].VersionOrder))}
		for _, r := range h.Replicas {
			for key, order := range r.VersionOrder {
				if _, done := vo.VersionOrder[key]; done {
					continue
				}
				ids := make([]string, len(order))
				for i, id := range order {
					ids[i] = id.String()
				}
				vo.VersionOrder[key] = ids
			}
		}
		if err := enc.Encode(&vo); err != nil {
			return fmt.Errorf("history: writing version order: %w", err)
		}
	}
	return bw.Flush()
}

// ReadJSONL parses the format WriteJSONL writes. The version order, if present, becomes a single
// replica named "history". Blank lines are skipped; lines may be of any length. Unknown fields,
// a read without "writer", duplicate transaction ids and a transaction line after the
// version_order line are errors, reported with their 1-based line number. Empty reads and writes
// come back as nil slices.
func ReadJSONL(r io.Reader) (*History, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	h := &History{}
	firstLine := make(map[txn.ID]int)
	orderLine := 0
	for n := 1; ; n++ {
		raw, readErr := br.ReadBytes('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return nil, fmt.Errorf("history: line %d: %w", n, readErr)
		}
		if b := bytes.TrimSpace(raw); len(b) > 0 {
			if orderLine != 0 {
				return nil, fmt.Errorf("history: line %d: content after the version_order line (line %d), which must be last", n, orderLine)
			}
			var l jsonLine
			if err := decodeLine(b, &l); err != nil {
				return nil, fmt.Errorf("history: line %d: %w", n, err)
			}
			if l.VersionOrder != nil {
				if l.ID != "" || l.Status != "" {
					return nil, fmt.Errorf("history: line %d: a line holds either a transaction or version_order, not both", n)
				}
				rep, err := parseVersionOrder(l.VersionOrder)
				if err != nil {
					return nil, fmt.Errorf("history: line %d: %w", n, err)
				}
				h.Replicas = []Replica{rep}
				orderLine = n
			} else {
				t, err := parseTxn(&l.jsonTxn)
				if err != nil {
					return nil, fmt.Errorf("history: line %d: %w", n, err)
				}
				if prev, dup := firstLine[t.ID]; dup {
					return nil, fmt.Errorf("history: line %d: duplicate transaction id %v (first on line %d)", n, t.ID, prev)
				}
				firstLine[t.ID] = n
				h.Txns = append(h.Txns, t)
			}
		}
		if readErr != nil { // io.EOF
			return h, nil
		}
	}
}

// decodeLine decodes exactly one JSON object from b, rejecting unknown fields and trailing data.
func decodeLine(b []byte, l *jsonLine) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(l); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func parseTxn(l *jsonTxn) (Txn, error) {
	if l.ID == "" {
		return Txn{}, errors.New(`missing "id" (and not a version_order line)`)
	}
	id, err := txn.ParseID(l.ID)
	if err != nil {
		return Txn{}, err
	}
	if id == txn.None {
		return Txn{}, fmt.Errorf("transaction id %q names the initial version", l.ID)
	}
	t := Txn{ID: id, DC: l.DC, Client: l.Client, StartUs: l.StartUs, EndUs: l.EndUs, Snapshot: l.Snapshot}
	switch {
	case l.Attempt < 0:
		return Txn{}, fmt.Errorf("transaction %v: attempt %d, want at least 1", id, l.Attempt)
	case l.Attempt > 1:
		t.Attempt = l.Attempt
	}
	if l.First != "" && l.First != l.ID {
		if t.First, err = txn.ParseID(l.First); err != nil {
			return Txn{}, fmt.Errorf("transaction %v: first: %w", id, err)
		}
	}
	switch l.Status {
	case "committed":
		t.Status = txn.Committed
		if l.Reason != nil {
			return Txn{}, fmt.Errorf("committed transaction %v has a reason", id)
		}
	case "aborted":
		t.Status = txn.Aborted
		if l.Reason != nil {
			t.Reason = txn.AbortReason(*l.Reason)
		}
	case "unknown":
		t.Status = txn.Unknown
		if l.Reason != nil {
			return Txn{}, fmt.Errorf("transaction %v of unknown outcome has a reason", id)
		}
	default:
		return Txn{}, fmt.Errorf("transaction %v: status %q is not \"committed\", \"aborted\" or \"unknown\"", id, l.Status)
	}
	if len(l.Reads) > 0 {
		t.Reads = make([]txn.Read, len(l.Reads))
		for i, r := range l.Reads {
			if !r.Writer.present {
				return Txn{}, fmt.Errorf("transaction %v: read %d of %q has no \"writer\" (use null for the initial version)", id, i, r.Key)
			}
			t.Reads[i] = txn.Read{Key: r.Key, Version: r.Writer.id}
		}
	}
	if len(l.Writes) > 0 {
		t.Writes = l.Writes
	}
	return t, nil
}

func parseVersionOrder(m map[string][]string) (Replica, error) {
	rep := Replica{Name: "history", VersionOrder: make(map[string][]txn.ID, len(m))}
	for key, ids := range m {
		order := make([]txn.ID, len(ids))
		for i, s := range ids {
			id, err := txn.ParseID(s)
			if err != nil {
				return Replica{}, fmt.Errorf("version_order[%q][%d]: %w", key, i, err)
			}
			order[i] = id
		}
		rep.VersionOrder[key] = order
	}
	return rep, nil
}
