//go:build integration

// Package chart checks the Helm chart with a real helm (hack/helm.sh; HELM
// names the binary) and installs what it renders into a real kube-apiserver
// (hack/control-plane.sh; KUBEBUILDER_ASSETS), where the real joiner binary
// runs with the chart's ServiceAccount and nothing more.
package chart

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

var (
	helmBin    string // the helm binary
	joinerBin  string // the joiner binary, built for these tests
	cfg        *rest.Config
	kubeconfig string // the API server's admin, for helm
	tmpDir     string
	chartDir   = filepath.Join("..", "..", "charts", "joiner")
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	crlog.SetLogger(zap.New(zap.WriteTo(io.Discard))) // the controller under test is the binary, which logs to its own output
	helmBin = os.Getenv("HELM")
	if helmBin == "" {
		fmt.Fprintln(os.Stderr, "HELM is not set: run hack/test.sh, or export HELM=$(hack/helm.sh)")
		return 1
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run hack/test.sh, or export KUBEBUILDER_ASSETS=$(hack/control-plane.sh)")
		return 1
	}
	var err error
	tmpDir, err = os.MkdirTemp("", "joiner-chart-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmpDir)
	joinerBin = filepath.Join(tmpDir, "joiner")
	build := exec.Command("go", "build", "-o", joinerBin, "../../cmd/joiner")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cmd/joiner:", err)
		return 1
	}
	// No CRDs: the tests install the chart's own. envtest's kube-apiserver
	// authorizes with RBAC (its admin user is in system:masters), so the
	// chart's ServiceAccount gets exactly what its roles grant.
	env := &envtest.Environment{}
	cfg, err = env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver and etcd:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}()
	kubeconfig = filepath.Join(tmpDir, "admin.kubeconfig")
	admin := &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	if err := writeKubeconfig(kubeconfig, admin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// writeKubeconfig writes a kubeconfig for the test's API server as user.
func writeKubeconfig(path string, user *clientcmdapi.AuthInfo) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["user"] = user
	c.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "user"}
	c.CurrentContext = "test"
	return clientcmd.WriteToFile(*c, path)
}
