package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

type recordFlags struct {
	kubeconfig, namespace, selector, output string
	duration                                time.Duration
}

func newRecordCommand() *cobra.Command {
	var f recordFlags
	cmd := &cobra.Command{
		Use:   "record --kubeconfig FILE -o TRACE",
		Short: "Record what a live cluster does, for replay and backtest (read-only)",
		Long: `record watches a live cluster (read-only) — pods and their owners, HPAs,
PodDisruptionBudgets, storage, Nodes, NodeClaims, NodePools, node classes and
NodeOverlays — and writes every change, as it happens, to a trace: a
gzip-compressed JSON-lines file of format joiner.dev/trace/v1alpha1
(docs/trace.md). Only what scheduling and autoscaling need is kept; container
environments, commands, images, annotations other than Karpenter's, user data
and every Secret and ConfigMap are never written.

It records for --for, or until interrupted, and flushes what it has every few
seconds: a recording that is killed keeps all but its last moments. A watch
that breaks resumes where it stopped; one that cannot (its resourceVersion
expired) is written as a gap, and the kind is listed again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRecord(cmd.Context(), cmd.ErrOrStderr(), f)
		},
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "the cluster to record (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "the trace file to write (required), e.g. cluster.trace.gz")
	cmd.Flags().DurationVar(&f.duration, "for", 0, "how long to record (0: until interrupted)")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "record the namespaced kinds of one namespace only")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "record only the pods and workloads this label selector selects")
	return cmd
}

func runRecord(ctx context.Context, errOut io.Writer, f recordFlags) error {
	if f.output == "" {
		return errors.New("-o/--output: say which file the trace goes to, e.g. -o cluster.trace.gz")
	}
	if f.duration < 0 {
		return fmt.Errorf("--for %s: a duration to record, e.g. --for 24h (0: until interrupted)", f.duration)
	}
	sel := labels.Everything()
	if f.selector != "" {
		s, err := labels.Parse(f.selector)
		if err != nil {
			return fmt.Errorf("--selector %q: %w (write a label selector, e.g. app=web,tier!=batch)", f.selector, err)
		}
		sel = s
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: f.kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	scheme, err := trace.Scheme()
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to the API server at %s: %w", cfg.Host, err)
	}
	file, err := os.Create(f.output)
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	rec, err := trace.Start(ctx, c, file, trace.Options{Namespace: f.namespace, Selector: sel, Server: cfg.Host})
	if err != nil {
		_ = file.Close()
		_ = os.Remove(f.output)
		return fmt.Errorf("the API server at %s: %w", cfg.Host, err)
	}
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	fmt.Fprintf(errOut, "recording %s to %s", cfg.Host, f.output)
	if f.duration > 0 {
		fmt.Fprintf(errOut, " for %s", f.duration)
	}
	fmt.Fprintln(errOut, " (interrupt to stop)")
	runErr := rec.Run(ctx)
	closeErr := file.Close()
	if err := errors.Join(runErr, closeErr); err != nil {
		return fmt.Errorf("recording (the trace %s holds what came before): %w", f.output, err)
	}
	fmt.Fprintf(errOut, "recorded to %s\n", f.output)
	return nil
}
