// Package trace is Joiner's record of what a cluster did: a versioned,
// gzip-compressed JSON-lines file that `joiner record` writes from a live
// cluster's watches (docs/trace.md) and that replay and backtest read.
//
// A trace keeps only what scheduling and autoscaling need of each object
// (see Sanitize): requests and limits, selectors, affinities, tolerations,
// spread, priority, volumes by claim, owners, the node's capacity, labels
// and taints. Environment, commands, arguments, images, annotations other
// than Karpenter's, user data and every Secret and ConfigMap never enter it.
package trace

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Version is the format of the traces this package writes; a reader
// refuses any other.
const Version = "joiner.dev/trace/v1alpha1"

// Op is what a record says happened.
type Op string

const (
	// OpHeader is the first record: the Header.
	OpHeader Op = "header"
	// OpAdd, OpUpdate and OpDelete are a watch's events: the object as it
	// is (or was, last) then.
	OpAdd    Op = "add"
	OpUpdate Op = "update"
	OpDelete Op = "delete"
	// OpSync starts a listing of a kind (at the start, and after a gap):
	// the adds up to its OpSynced are what the list held, and an object of
	// the kind not among them is gone.
	OpSync   Op = "sync"
	OpSynced Op = "synced"
	// OpGap says the watch of a kind broke and could not resume where it
	// stopped (its resourceVersion had expired): what happened to the kind
	// between Gap.From and the next OpSynced is unknown.
	OpGap Op = "gap"
	// OpEnd is the last record of a trace that was closed cleanly.
	OpEnd Op = "end"
)

// Record is one line of a trace.
type Record struct {
	// Time the recorder saw it (its clock, UTC).
	Time time.Time `json:"t"`
	Op   Op        `json:"op"`
	// Kind of Object: Pod, Deployment, …, NodeClaim.
	Kind   string          `json:"kind,omitempty"`
	Object json.RawMessage `json:"object,omitempty"`
	Header *Header         `json:"header,omitempty"`
	Gap    *Gap            `json:"gap,omitempty"`
}

// Header says what the trace is of.
type Header struct {
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	// Server is the API server's address; Namespace and Selector the
	// filters the recording ran with ("" for none).
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Selector  string `json:"selector,omitempty"`
	// Kinds recorded, and Notes on what was not (a kind the cluster does
	// not serve, …).
	Kinds []string `json:"kinds"`
	Notes []string `json:"notes,omitempty"`
}

// Gap is a break in a kind's watch that lost events.
type Gap struct {
	// From is the resourceVersion the watch could not resume at; Why the
	// API server's answer.
	From string `json:"from"`
	Why  string `json:"why"`
}

// Writer writes a trace; it is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	gz  *gzip.Writer
	buf *bufio.Writer
	enc *json.Encoder
	err error
}

// NewWriter starts a trace on w with its header.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	gz := gzip.NewWriter(w)
	buf := bufio.NewWriterSize(gz, 1<<16)
	tw := &Writer{gz: gz, buf: buf, enc: json.NewEncoder(buf)}
	h.Version = Version
	return tw, tw.Write(Record{Time: h.Started, Op: OpHeader, Header: &h})
}

// Write appends a record.
func (w *Writer) Write(r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	r.Time = r.Time.UTC()
	w.err = w.enc.Encode(r)
	return w.err
}

// Object appends an object's record.
func (w *Writer) Object(at time.Time, op Op, kind string, obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("trace: %s: %w", kind, err)
	}
	return w.Write(Record{Time: at, Op: op, Kind: kind, Object: b})
}

// Flush pushes what was written to the underlying writer, compressed, so
// a trace cut short by a crash still holds it.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.err = w.buf.Flush(); w.err == nil {
		w.err = w.gz.Flush()
	}
	return w.err
}

// Close ends the trace with OpEnd at and closes the compression (not the
// underlying writer).
func (w *Writer) Close(at time.Time) error {
	werr := w.Write(Record{Time: at, Op: OpEnd})
	w.mu.Lock()
	defer w.mu.Unlock()
	ferr := w.buf.Flush()
	cerr := w.gz.Close()
	return errors.Join(werr, ferr, cerr)
}

// Reader reads a trace record by record.
type Reader struct {
	dec    *json.Decoder
	Header Header
	line   int
	name   string
}

// NewReader reads a trace's header from r; name is its file, for errors.
func NewReader(r io.Reader, name string) (*Reader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: not a trace (a gzip-compressed JSON-lines file `joiner record` writes): %w", name, err)
	}
	tr := &Reader{dec: json.NewDecoder(gz), name: name}
	first, err := tr.Next()
	if err != nil {
		return nil, err
	}
	if first.Op != OpHeader || first.Header == nil {
		return nil, fmt.Errorf("%s:1: the first record is %q, not the header: not a trace `joiner record` wrote", name, first.Op)
	}
	if first.Header.Version != Version {
		return nil, fmt.Errorf("%s:1: trace format %q; this joiner reads %q (record the cluster again with this version)", name, first.Header.Version, Version)
	}
	tr.Header = *first.Header
	return tr, nil
}

// Next is the next record, or io.EOF after the last.
func (r *Reader) Next() (Record, error) {
	var rec Record
	if err := r.dec.Decode(&rec); err != nil {
		if errors.Is(err, io.EOF) {
			return rec, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return rec, fmt.Errorf("%s:%d: the trace ends mid-record (cut short while it was written): %w", r.name, r.line+1, err)
		}
		var perr *time.ParseError
		if errors.As(err, &perr) {
			return rec, fmt.Errorf("%s:%d: the record's \"t\" is %q, not an RFC 3339 time such as 2026-12-05T10:00:00Z (was the trace edited by hand?): %w", r.name, r.line+1, perr.Value, err)
		}
		return rec, fmt.Errorf("%s:%d: not a trace record (one JSON object a line: t, op, kind, object, as `joiner record` writes): %w", r.name, r.line+1, err)
	}
	r.line++
	return rec, nil
}

// All reads the records left, up to the end.
func (r *Reader) All() ([]Record, error) {
	var out []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}
