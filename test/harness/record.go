package harness

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// Recording is `joiner record`'s recorder, in-process, writing a cluster's
// trace to a file until stopped.
type Recording struct {
	// Path is the trace file.
	Path   string
	file   *os.File
	cancel context.CancelFunc
	done   chan error
}

// Record starts recording the cluster cfg reaches into path (created):
// what a recording of `joiner record --kubeconfig … -o path` would hold.
func Record(cfg *rest.Config, path string) (*Recording, error) {
	scheme, err := trace.Scheme()
	if err != nil {
		return nil, err
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec, err := trace.Start(ctx, wc, f, trace.Options{Server: cfg.Host})
	if err != nil {
		cancel()
		f.Close()
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	r := &Recording{Path: path, file: f, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- rec.Run(ctx) }()
	return r, nil
}

// Stop ends the recording and closes its file: the trace is complete.
func (r *Recording) Stop() error {
	r.cancel()
	err := <-r.done
	if cerr := r.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recording %s: %w", r.Path, err)
	}
	return nil
}
