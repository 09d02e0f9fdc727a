package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	auditLogs                               []string
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
expired) is written as a gap, and the kind is listed again.

--from-audit-log FILE... makes the same trace from kube-apiserver audit events
(audit.k8s.io/v1 JSON lines, as EKS exports them; several files are merged by
time) instead of a live cluster: creates, updates, patches and deletes of the
kinds above, bindings and evictions. Changes audited at level Metadata carry
no object and are counted in the trace's notes.`,
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
	cmd.Flags().StringSliceVar(&f.auditLogs, "from-audit-log", nil, "make the trace from these audit logs (audit.k8s.io/v1 JSON lines) instead of a live cluster")
	return cmd
}

func runRecord(ctx context.Context, errOut io.Writer, f recordFlags) error {
	if f.output == "" {
		return errors.New("-o/--output: say which file the trace goes to, e.g. -o cluster.trace.gz")
	}
	if len(f.auditLogs) > 0 {
		if f.kubeconfig != "" || f.duration != 0 || f.namespace != "" || f.selector != "" {
			return errors.New("--from-audit-log reads files: --kubeconfig, --for, --namespace and --selector do not go with it")
		}
		return recordAuditLogs(errOut, f)
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

// recordAuditLogs writes the trace of audit logs, to a temporary file
// renamed into place: a log with a bad line leaves no trace behind.
func recordAuditLogs(errOut io.Writer, f recordFlags) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.output), ".joiner-trace-*")
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := trace.FromAuditLog(tmp, f.auditLogs); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--from-audit-log: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), f.output); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	fmt.Fprintf(errOut, "recorded %d audit log(s) to %s\n", len(f.auditLogs), f.output)
	return nil
}
