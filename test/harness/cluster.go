// Package harness runs a cluster of real parts for tests and benchmarks
// that need more than an API server: kube-apiserver and etcd (envtest, from
// KUBEBUILDER_ASSETS, which hack/control-plane.sh builds), kube-scheduler,
// kube-controller-manager and kwok's controller as processes, and a node
// autoscaler under test (Autoscaler) as a process of its own, whose
// resource use and /metrics the caller can read.
package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
)

// ClusterOptions say what a cluster starts with.
type ClusterOptions struct {
	// CRDDirectories are installed before StartCluster returns.
	CRDDirectories []string
	// LogDir receives each process's log (name.log); a temporary directory
	// of the test when empty.
	LogDir string
	// ClientQPS is the client rate limit of kube-scheduler and
	// kube-controller-manager (burst twice that); 100 when 0, so that
	// creating and binding thousands of pods is not what a benchmark of
	// the autoscaler measures.
	ClientQPS int
	// KubeletWorkers, when not 0, is how many pods kwok takes through a
	// stage at once (nodes: half as many), for kwok's default of four
	// each (kwokConfiguration).
	KubeletWorkers int
}

// Cluster is a running control plane: kube-apiserver and etcd, with
// kube-scheduler, kube-controller-manager (deployment, replicaset,
// nodelifecycle, garbagecollector and disruption controllers) and kwok's
// controller making the Nodes annotated kwok.x-k8s.io/node=fake Ready and
// their pods Running.
type Cluster struct {
	// Config is the API server's admin.
	Config *rest.Config
	// Kubeconfig is a file holding Config, for the processes.
	Kubeconfig string
	// Assets is KUBEBUILDER_ASSETS, where the binaries are.
	Assets string
	// LogDir holds the processes' logs.
	LogDir string
}

// StartCluster starts a fresh control plane; it stops when the test or
// benchmark ends (processes first, then the API server and etcd).
func StartCluster(tb testing.TB, opts ClusterOptions) *Cluster {
	tb.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	for _, name := range []string{"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok", "kwok-stages.yaml"} {
		if fi, err := os.Stat(filepath.Join(assets, name)); err != nil || fi.IsDir() {
			tb.Fatalf("%s is not in KUBEBUILDER_ASSETS (%q): hack/control-plane.sh builds it; export KUBEBUILDER_ASSETS=$(hack/control-plane.sh)", name, assets)
		}
	}
	logDir := opts.LogDir
	if logDir == "" {
		logDir = tb.TempDir()
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	env := &envtest.Environment{CRDDirectoryPaths: opts.CRDDirectories, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		tb.Fatalf("starting kube-apiserver and etcd: %v", err)
	}
	// Registered first, so it runs last: after the processes below stop.
	tb.Cleanup(func() {
		if err := env.Stop(); err != nil {
			tb.Logf("stopping kube-apiserver and etcd: %v", err)
		}
	})
	c := &Cluster{Config: cfg, Assets: assets, LogDir: logDir, Kubeconfig: filepath.Join(logDir, "admin.kubeconfig")}
	if err := writeKubeconfig(c.Kubeconfig, cfg); err != nil {
		tb.Fatal(err)
	}
	qps := opts.ClientQPS
	if qps == 0 {
		qps = 100
	}
	rate := []string{fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", 2*qps)}
	auth := []string{"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig}
	c.start(tb, "kube-scheduler", append(append(auth, rate...), "--leader-elect=false", "--secure-port=0", "-v=1")...)
	c.start(tb, "kube-controller-manager", append(append(auth, rate...),
		"--controllers=deployment,replicaset,nodelifecycle,garbagecollector,disruption",
		"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false", "-v=1")...)
	// kwok with the stages and node lease kwokctl gives it.
	kwokArgs := []string{"--kubeconfig=" + c.Kubeconfig, "--config=" + filepath.Join(assets, "kwok-stages.yaml"),
		"--manage-nodes-with-annotation-selector=" + kwok.AnnotationNode + "=fake", "--node-lease-duration-seconds=40"}
	if opts.KubeletWorkers > 0 {
		kwokConfig := filepath.Join(logDir, "kwok-configuration.yaml")
		if err := os.WriteFile(kwokConfig, []byte(kwokConfiguration(opts.KubeletWorkers)), 0o644); err != nil {
			tb.Fatal(err)
		}
		kwokArgs = append(kwokArgs, "--config="+kwokConfig)
	}
	c.start(tb, "kwok", kwokArgs...)
	return c
}

// kwokConfiguration gives kwok's stages more workers than its default of
// four a stage: pods workers at once, nodes half as many. kwok stands in
// for every node's kubelet, and real kubelets write their pods' and
// node's status in parallel, one each; with four, the 5,000 pods of the
// scale benchmark, bound by 78 s, were all Running only at 154 s
// (docs/scale.md, session 34), which timed kwok, not the autoscaler. kwok
// does not default a configuration it reads from a file: the other
// options are its defaults (v0.8.0), written out.
func kwokConfiguration(pods int) string {
	return fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: %d
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  cidr: 10.0.0.0/24
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
`, pods, max(1, pods/2))
}

func (c *Cluster) start(tb testing.TB, name string, args ...string) {
	tb.Helper()
	if _, err := StartProcess(tb, ProcessSpec{Name: name, Path: filepath.Join(c.Assets, name), Args: args, LogDir: c.LogDir}); err != nil {
		tb.Fatal(err)
	}
}

// APIServerMetrics scrapes the API server's /metrics.
func (c *Cluster) APIServerMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	return ParseMetrics(raw)
}

// writeKubeconfig writes a kubeconfig for cfg's user.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}
