package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// newControllerCommand is `joiner controller`. Its complexity is the
// flags' registration and checks, one after the other.
func newControllerCommand() *cobra.Command {
	var election leaderElection
	var kubeconfig, metricsAddr, probeAddr string
	var cloud cloudFlags
	var leaderElect, profiling bool
	var tuning controllerTuning
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run Joiner in a cluster: pending pods become NodeClaims, NodeClaims become nodes",
		Long: `Run Joiner as the cluster's node autoscaler. It keeps no state of its own:
informers on Pods, Nodes, NodeClaims, NodePools, DaemonSets and
PodDisruptionBudgets feed the same engine the simulator runs, and a restarted
controller rebuilds everything from the API server.

Cloud providers (--cloud-provider):
  kwok   instances are Node objects, as a kubelet would register them, for kwok's
         controller to make Ready (offerings from the EC2 catalog, --region/--zones)
  sim    the simulator's EC2 in-process: kwok's Nodes, registered and made Ready
         after the simulated boot latencies, launches failing at an API error rate
         and in insufficient-capacity windows (--seed, --api-error-rate, or the
         cloud section of a scenario with --scenario DIR)
  aws    real EC2 instances from the EC2NodeClasses (subnets, security groups,
         AMIs, instance profile resolved into their status), launched by
         CreateFleet; instance types and prices from EC2 and the Pricing API;
         interruptions from an SQS queue (--interruption-queue). Credentials and
         region from the AWS SDK's default chain (IRSA, EKS Pod Identity, …);
         needs --cluster-name and --cluster-endpoint

It provisions for pending pods (batched: --batch-idle-duration after the
last one, --batch-max-duration at most), takes NodeClaims through Launched,
Registered and Initialized, disrupts (expiration, drift, consolidation, within
the NodePools' budgets), drains through the Eviction API, keeps the NodePools'
status and serves upstream Karpenter's metrics.

Settings also come from the environment, as upstream Karpenter's chart sets
them: LOG_LEVEL, BATCH_IDLE_DURATION, BATCH_MAX_DURATION, FEATURE_GATES,
MIN_VALUES_POLICY, IGNORE_DRA_REQUESTS, KUBE_CLIENT_QPS, KUBE_CLIENT_BURST (a
flag given on the command line wins), and for aws CLUSTER_NAME,
CLUSTER_ENDPOINT, INTERRUPTION_QUEUE and AWS_REGION. Unless GOGC is set, the
Go runtime collects garbage at GOGC=50: memory is what a controller's pod is
sized by.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			controllerGC()
			scheme := runtime.NewScheme()
			if err := tuning.fromEnv(cmd.Flags()); err != nil {
				return err
			}
			level, err := tuning.zapLevel()
			if err != nil {
				return err
			}
			spotToSpot, err := tuning.spotToSpot()
			if err != nil {
				return err
			}
			nodeRepair, err := tuning.nodeRepair()
			if err != nil {
				return err
			}
			nodeOverlay, err := tuning.gate("NodeOverlay")
			if err != nil {
				return err
			}
			capacityBuffer, err := tuning.gate("CapacityBuffer")
			if err != nil {
				return err
			}
			if cloud.aws.reservedCapacity, err = tuning.gate("ReservedCapacity"); err != nil {
				return err
			}
			schedulerConfig, err := tuning.scheduler(cmd.Flags())
			if err != nil {
				return err
			}
			policy, err := pf.policy()
			var bad *provisioning.FlagError
			if v, ok := os.LookupEnv("MIN_VALUES_POLICY"); errors.As(err, &bad) && bad.Flag == provisioning.FlagMinValues && ok && v == pf.minValues {
				return fmt.Errorf("$MIN_VALUES_POLICY=%q: %w", v, err)
			}
			if err != nil {
				return err
			}
			ctrl.SetLogger(zap.New(zap.Level(level)))
			if err := cloud.check(); err != nil {
				return err
			}
			if err := awsv1.AddToScheme(scheme); err != nil {
				return err
			}
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			cfg.QPS, cfg.Burst = tuning.kubeQPS, tuning.kubeBurst
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := v1.AddToScheme(scheme); err != nil {
				return err
			}
			if err := v1alpha1.AddToScheme(scheme); err != nil {
				return err
			}
			if err := autoscalingv1beta1.AddToScheme(scheme); err != nil {
				return err
			}
			breaks := &controller.WatchBreaks{}
			opts := ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: metricsAddr},
				HealthProbeBindAddress: probeAddr, LeaderElection: leaderElect, LeaderElectionID: "joiner-leader-election",
				Cache: controller.CacheOptions(breaks)}
			if profiling {
				opts.Metrics.ExtraHandlers = controller.ProfilingHandlers()
			}
			election.apply(&opts)
			mgr, err := ctrl.NewManager(cfg, opts)
			if err != nil {
				return fmt.Errorf("connecting to the API server at %s (from --kubeconfig, $KUBECONFIG or in-cluster): %w", cfg.Host, err)
			}
			ctx := ctrl.SetupSignalHandler()
			cmd.SetContext(ctx)
			provider, err := cloud.newProvider(cmd, cfg, mgr.GetClient(), clock.RealClock{})
			if err != nil {
				return err
			}
			c, err := controller.New(ctx, mgr, controller.Options{CloudProvider: provider,
				BatchIdle: tuning.batchIdle, BatchMax: tuning.batchMax, WatchBreaks: breaks, SpotToSpot: spotToSpot, NodeRepair: nodeRepair, NodeOverlay: nodeOverlay,
				CapacityBuffer: capacityBuffer, Policy: policy, SchedulerConfig: schedulerConfig})
			if err != nil {
				return fmt.Errorf("starting against the API server at %s (from --kubeconfig, $KUBECONFIG or in-cluster): %w", cfg.Host, err)
			}
			if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			// Not ready until the controller has seen the whole cluster and
			// decides: /readyz names what it still waits for.
			if err := mgr.AddReadyzCheck("cluster-state", c.ReadyzCheck()); err != nil {
				return err
			}
			return mgr.Start(ctx)
		},
	}
	f := cmd.Flags()
	election.addFlags(cmd)
	f.StringVar(&kubeconfig, "kubeconfig", "", "the kubeconfig to use (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	cloud.register(cmd)
	f.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "where /metrics is served (\"0\" for nowhere)")
	f.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "where /healthz and /readyz are served (\"0\" for nowhere)")
	f.BoolVar(&leaderElect, "leader-elect", false, "elect one leader among replicas (for more than one replica)")
	f.BoolVar(&profiling, "enable-profiling", false, "serve Go's pprof endpoints under /debug/pprof/, and a heap dump for hack/heapdump at /debug/heapdump, beside /metrics (upstream's flag)")
	tuning.addFlags(f)
	pf.register(cmd)
	return cmd
}

// controllerGOGC is the controller's GC percentage unless GOGC says
// otherwise: the heap may grow half over what is live between
// collections, not double. A controller's peak memory is what its pod is
// sized by, and its live heap (the informers' objects, the Store) is
// mostly what stays, so the trade is CPU a collection more often
// (docs/scale.md measures both at 5,000 pods).
const controllerGOGC = 50

// controllerGC sets controllerGOGC unless the environment sets GOGC: a
// process-wide setting, so the command's to make.
func controllerGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(controllerGOGC)
	}
}
