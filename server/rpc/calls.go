package rpc

import (
	"errors"
	"io"
	"runtime"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/meridian-kv/meridian/api/meridianpb"
	"github.com/meridian-kv/meridian/protocol"
)

// Limits of the Calls stream.
const (
	// maxStreamCalls bounds the calls outstanding on one Calls stream at a node; a call beyond
	// it fails with ResourceExhausted.
	maxStreamCalls = 1 << 16
	// maxBatchBytes bounds the encoded size of one CallBatch or ResultBatch a side puts
	// together, well under gRPC's default message limit (4 MiB); a single larger call or result
	// travels alone (a client sends a call that large by its unary RPC instead: callStream).
	maxBatchBytes = 1 << 20
)

// Calls serves the Calls stream: every call is validated and submitted as its unary RPC would
// be, and its result is queued for the stream's sender, which sends every result waiting at
// once in one ResultBatch. The handler ends when the client ends the stream or the connection
// breaks; the results of calls still running are then dropped.
func (s *service) Calls(stream meridianpb.Meridian_CallsServer) error {
	out := &resultQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	var sender sync.WaitGroup
	sender.Add(1)
	go func() {
		defer sender.Done()
		out.send(stream)
	}()
	defer func() {
		out.close()
		sender.Wait()
	}()
	for {
		batch, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		for _, c := range batch.GetCalls() {
			s.startCall(c, out)
		}
	}
}

// startCall validates and submits one call of the Calls stream; its result goes to out.
func (s *service) startCall(c *meridianpb.Call, out *resultQueue) {
	id := c.GetCallId()
	if !out.begin() {
		out.push(errResult(id, status.Errorf(codes.ResourceExhausted, "%d calls outstanding on this stream: the limit", maxStreamCalls)))
		return
	}
	var cs *clientState
	var req protocol.Request
	var err error
	switch op := c.GetRequest().(type) {
	case *meridianpb.Call_Get:
		cs, req, err = s.getRequest(op.Get)
	case *meridianpb.Call_Commit:
		cs, req, err = s.commitRequest(op.Commit)
	default:
		err = invalid("call %d carries no request", id)
	}
	if err != nil {
		out.end(errResult(id, err))
		return
	}
	s.start(cs, req, func(r protocol.Reply, err error) {
		if err != nil {
			out.end(errResult(id, err))
			return
		}
		res := &meridianpb.CallResult{CallId: id}
		switch req.Kind {
		case protocol.Get:
			res.Response = &meridianpb.CallResult_Get{Get: getResponse(r)}
		case protocol.Commit:
			resp, err := commitResponse(req.Txn.ID, r)
			if err != nil {
				out.end(errResult(id, err))
				return
			}
			res.Response = &meridianpb.CallResult_Commit{Commit: resp}
		}
		out.end(res)
	})
}

// errResult is the result of call id that failed with err, a gRPC status error.
func errResult(id uint64, err error) *meridianpb.CallResult {
	st := status.Convert(err)
	return &meridianpb.CallResult{CallId: id, Code: uint32(st.Code()), Message: st.Message()}
}

// resultQueue holds the results of one Calls stream until its sender sends them, and counts
// the calls outstanding.
type resultQueue struct {
	mu          sync.Mutex
	results     []*meridianpb.CallResult
	outstanding int
	closed      bool
	wake        chan struct{} // a token when results wait and the sender may sleep
	done        chan struct{} // closed with the queue
}

// begin counts one more outstanding call, unless maxStreamCalls are.
func (q *resultQueue) begin() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.outstanding >= maxStreamCalls {
		return false
	}
	q.outstanding++
	return true
}

// end queues the result of an outstanding call.
func (q *resultQueue) end(r *meridianpb.CallResult) {
	q.mu.Lock()
	q.outstanding--
	q.mu.Unlock()
	q.push(r)
}

// push queues r for the sender; after close it drops r.
func (q *resultQueue) push(r *meridianpb.CallResult) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.results = append(q.results, r)
	first := len(q.results) == 1
	q.mu.Unlock()
	if first {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// close drops the queued results and ends the sender.
func (q *resultQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.results = nil
		close(q.done)
	}
}

// take removes and returns the queued results, at most maxBatchBytes of them (at least one).
func (q *resultQueue) take(dst []*meridianpb.CallResult) []*meridianpb.CallResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, bytes := 0, 0
	for n < len(q.results) {
		bytes += proto.Size(q.results[n])
		if n > 0 && bytes > maxBatchBytes {
			break
		}
		n++
	}
	dst = append(dst, q.results[:n]...)
	clear(q.results[:n])
	q.results = q.results[n:]
	if len(q.results) > 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return dst
}

// send sends the queued results, every batch waiting at once in one message, until the queue is
// closed or sending fails (the stream broke: its handler then ends too).
func (q *resultQueue) send(stream meridianpb.Meridian_CallsServer) {
	var batch []*meridianpb.CallResult
	for {
		select {
		case <-q.done:
			return
		case <-q.wake:
			runtime.Gosched() // let the event loop queue the rest of its turn's replies first
		}
		batch = q.take(batch[:0])
		if len(batch) == 0 {
			continue
		}
		if err := stream.Send(&meridianpb.ResultBatch{Results: batch}); err != nil {
			return
		}
		clear(batch)
	}
}
