package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
)

func newControllerCommand() *cobra.Command {
	var election leaderElection
	var kubeconfig, cloudProvider, catalogFile, region, metricsAddr, probeAddr string
	var zones []string
	var leaderElect bool
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

Today it provisions for pending pods (batched 1 s idle, 10 s at most) and takes
NodeClaims through Launched, Registered and Initialized; disruption, draining
and the NodePool status are still to come.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New())
			if cloudProvider != "kwok" {
				return fmt.Errorf("--cloud-provider %q: the providers are: kwok (sim and aws are still to come)", cloudProvider)
			}
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := v1.AddToScheme(scheme); err != nil {
				return err
			}
			opts := ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: metricsAddr},
				HealthProbeBindAddress: probeAddr, LeaderElection: leaderElect, LeaderElectionID: "joiner-leader-election"}
			election.apply(&opts)
			mgr, err := ctrl.NewManager(cfg, opts)
			if err != nil {
				return fmt.Errorf("connecting to the API server at %s (from --kubeconfig, $KUBECONFIG or in-cluster): %w", cfg.Host, err)
			}
			cat, err := loadCatalog(catalogFile)
			if err != nil {
				return err
			}
			types, _, err := cat.InstanceTypes(catalog.Options{Region: region, Zones: zones})
			if err != nil {
				return fmt.Errorf("--region/--zones: %w", err)
			}
			provider, err := kwok.New(mgr.GetClient(), types, clock.RealClock{})
			if err != nil {
				return err
			}
			ctx := ctrl.SetupSignalHandler()
			if _, err := controller.New(ctx, mgr, controller.Options{CloudProvider: provider}); err != nil {
				return fmt.Errorf("starting against the API server at %s (from --kubeconfig, $KUBECONFIG or in-cluster): %w", cfg.Host, err)
			}
			if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			return mgr.Start(ctx)
		},
	}
	f := cmd.Flags()
	election.addFlags(cmd)
	f.StringVar(&kubeconfig, "kubeconfig", "", "the kubeconfig to use (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&cloudProvider, "cloud-provider", "kwok", "where instances come from: "+strings.Join([]string{"kwok"}, ", "))
	f.StringVar(&catalogFile, "catalog", "", "an instance-type catalog file (the embedded EC2 catalog's format) instead of the embedded one")
	f.StringVar(&region, "region", "", "the cluster's region (default us-east-1)")
	f.StringSliceVar(&zones, "zones", nil, "the cluster's zones (default: the catalog's for the region)")
	f.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "where /metrics is served (\"0\" for nowhere)")
	f.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "where /healthz and /readyz are served (\"0\" for nowhere)")
	f.BoolVar(&leaderElect, "leader-elect", false, "elect one leader among replicas (for more than one replica)")
	return cmd
}
