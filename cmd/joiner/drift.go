package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/lint"
)

type driftFlags struct {
	kubeconfig, output, metricsAddr string
	watch                           bool
	interval                        time.Duration
}

func newDriftCommand() *cobra.Command {
	var f driftFlags
	cmd := &cobra.Command{
		Use:   "drift DIR --kubeconfig FILE",
		Short: "Compare a live cluster's NodePools and NodeClasses with the manifests in Git",
		Long: `drift reads the NodePools, EC2NodeClasses and NodeOverlays below DIR (one cluster's
manifests in Git) and those of the cluster behind --kubeconfig (read-only),
applies the CRDs' defaults to both, and reports resources missing from the
cluster, extra in the cluster, and changed: every field the Git manifest sets
that the cluster holds differently. Server-set defaults, status and fields
only the cluster sets are not drift.

Exit status: 0 in sync, 1 drift, 2 the comparison could not be made.

--watch compares every --interval and serves joiner_config_drift{kind,name}
(1 drifted, 0 in sync) on --metrics-bind-address /metrics for alerting,
until interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDrift(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "the cluster to compare (required; read-only)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "text or json")
	cmd.Flags().BoolVar(&f.watch, "watch", false, "keep comparing and export joiner_config_drift on /metrics")
	cmd.Flags().DurationVar(&f.interval, "interval", time.Minute, "with --watch, how often to compare")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "with --watch, where /metrics is served")
	return cmd
}

func runDrift(ctx context.Context, out, errOut io.Writer, dir string, f driftFlags) error {
	if f.kubeconfig == "" {
		return couldNotRun(errors.New("--kubeconfig is required: drift compares Git with the cluster it names"))
	}
	if f.output != "text" && f.output != "json" {
		return couldNotRun(fmt.Errorf("-o %q: use text or json", f.output))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: f.kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return couldNotRun(fmt.Errorf("--kubeconfig: %w", err))
	}
	cfg.Timeout = liveTimeout
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return couldNotRun(fmt.Errorf("connecting to the API server at %s (from --kubeconfig %s): %w", cfg.Host, f.kubeconfig, err))
	}
	l, err := lint.New()
	if err != nil {
		return couldNotRun(err)
	}
	write := func(r *lint.DriftReport) error {
		if f.output == "json" {
			return lint.WriteDriftJSON(out, r)
		}
		return lint.WriteDriftText(out, r)
	}
	if !f.watch {
		r, err := l.DriftOnce(ctx, dir, client.Reader(c))
		if err != nil {
			return couldNotRun(err)
		}
		if err := write(r); err != nil {
			return couldNotRun(err)
		}
		if r.Drifted() {
			return &exitError{code: 1}
		}
		return nil
	}

	reg := prometheus.NewRegistry()
	gauge, err := lint.DriftGauge(reg)
	if err != nil {
		return couldNotRun(err)
	}
	ln, err := net.Listen("tcp", f.metricsAddr)
	if err != nil {
		return couldNotRun(fmt.Errorf("--metrics-bind-address %s: %w", f.metricsAddr, err))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	fmt.Fprintf(errOut, "serving joiner_config_drift on http://%s/metrics, comparing every %s\n", ln.Addr(), f.interval)

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// A report is printed when it differs from the last one.
	var last string
	l.WatchDrift(ctx, dir, client.Reader(c), f.interval, gauge, func(r *lint.DriftReport, err error) {
		if err != nil {
			fmt.Fprintf(errOut, "%s: %v\n", time.Now().UTC().Format(time.RFC3339), err)
			return
		}
		var b strings.Builder
		_ = lint.WriteDriftJSON(&b, r)
		if b.String() != last {
			last = b.String()
			_ = write(r)
		}
	})
	return nil
}
