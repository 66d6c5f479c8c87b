package protocol

// Failer is implemented by a replica that can find it cannot go on without losing what it
// acknowledged (a log maintainer whose records are gone: its disk was lost). Failure returns
// why, or nil. The network server checks it after every batch of inputs and stops the node with
// the error, rather than let it serve.
type Failer interface {
	Failure() error
}
