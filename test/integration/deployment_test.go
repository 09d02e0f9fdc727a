//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
)

// TestDeploymentScalesFromZeroOnKwokNodes is the whole path on real
// components: Deployments scaled from 0 to 50 pods of mixed requests →
// kube-controller-manager's ReplicaSets create the pods → kube-scheduler
// finds no room → Joiner's NodeClaims → the kwok provider's Nodes → kwok's
// controller makes them Ready (and node lifecycle lifts the not-ready taint)
// → kube-scheduler binds every pod → kwok runs it. Scaled back to 0, the
// pods go (kwok finishes their deletion as a kubelet would).
func TestDeploymentScalesFromZeroOnKwokNodes(t *testing.T) {
	ctx := context.Background()
	startCluster(t)
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	defer stop()

	const pool = "deploy"
	createPool(t, kc, pool, func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") // this test is about provisioning
	})
	ns := testNamespace(t, "deploy")
	sizes := []struct {
		name, cpu, mem string
		replicas       int32
	}{{"small", "250m", "256Mi", 20}, {"medium", "500m", "512Mi", 20}, {"large", "1", "1Gi", 10}}
	var deployments []*appsv1.Deployment
	want := 0
	for _, s := range sizes {
		d := deployment(ns, s.name, s.cpu, s.mem, map[string]string{"pool": pool})
		if err := kc.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		deployments = append(deployments, d)
		want += int(s.replicas)
	}
	start := time.Now()
	for i, s := range sizes {
		scale(t, kc, deployments[i], s.replicas)
	}

	waitRunningWithin(t, kc, ns, want, 3*time.Minute)
	t.Logf("%d pods Running %s after the scale-up", want, time.Since(start).Round(time.Second))

	var claims v1.NodeClaimList
	if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) == 0 {
		t.Fatal("the pods run, but NodePool deploy has no NodeClaims")
	}
	claimOfNode := map[string]string{}
	for _, nc := range claims.Items {
		claimOfNode[nc.Status.NodeName] = nc.Name
	}
	pods, err := podsOf(ctx, kc, ns)
	if err != nil {
		t.Fatal(err)
	}
	podsOn := map[string]int{}
	for _, p := range pods {
		podsOn[p.Spec.NodeName]++
	}
	var summary []string
	for name := range podsOn {
		var node corev1.Node
		if err := kc.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
			t.Fatal(err)
		}
		if node.Annotations[kwok.AnnotationNode] != "fake" || node.Labels[v1.LabelNodePool] != pool || claimOfNode[name] == "" {
			t.Errorf("pods run on node %s, which is not a kwok Node of a NodeClaim of pool %s (annotations %v, labels %v)",
				name, pool, node.Annotations, node.Labels)
		}
		if !nodeReady(&node) {
			t.Errorf("node %s runs pods but is not Ready", name)
		}
	}
	empty := 0
	for _, nc := range claims.Items {
		summary = append(summary, fmt.Sprintf("%s %s: %d pods", nc.Name, nc.Labels[v1.LabelInstanceType], podsOn[nc.Status.NodeName]))
		if podsOn[nc.Status.NodeName] == 0 {
			empty++
		}
	}
	sort.Strings(summary)
	t.Logf("%d NodeClaims; %v", len(claims.Items), summary)
	// Each claim was made for pods: one that ends up running none was
	// made twice for the same pods.
	if empty > 0 {
		t.Errorf("%d of %d NodeClaims run none of the pods: provisioning made claims for pods it had already planned for", empty, len(claims.Items))
	}
	eventually(t, "every claim of the pool initialized with a Ready kwok Node", func(ctx context.Context) (bool, error) {
		if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			return false, err
		}
		for _, nc := range claims.Items {
			var node corev1.Node
			if !claimCondition(&nc, v1.ConditionInitialized) || kc.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, &node) != nil ||
				node.Annotations[kwok.AnnotationNode] != "fake" || !nodeReady(&node) {
				return false, nil
			}
		}
		return true, nil
	})

	// Scaled to 0, the pods go (kwok finishes their deletion as a kubelet
	// would); then no nodes are left to the tests after this one: the
	// claims' termination drains and removes their Nodes while Joiner runs.
	cleanUpPool(t, kc, pool, ns, deployments...)
}

// startCluster runs, until the test ends, what a cluster has besides its
// API server and Joiner: kube-scheduler, kube-controller-manager
// (Deployments, ReplicaSets, node lifecycle, garbage collection and the
// disruption controller that keeps PDBs' status) and kwok's controller for
// the kwok provider's Nodes; schedulerArgs are more flags for
// kube-scheduler. It returns the admin kubeconfig they use.
func startCluster(t *testing.T, schedulerArgs ...string) string {
	t.Helper()
	assets := requireAssets(t, "kube-scheduler", "kube-controller-manager", "kwok", "kwok-stages.yaml")
	kubeconfig := writeKubeconfig(t)
	startBinary(t, assets, "kube-scheduler", append([]string{
		"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false", "--secure-port=0", "-v=2"}, schedulerArgs...)...)
	startBinary(t, assets, "kube-controller-manager",
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--controllers=deployment,replicaset,nodelifecycle,garbagecollector,disruption",
		"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false", "-v=2")
	// kwok with the stages and node lease kwokctl gives it.
	startBinary(t, assets, "kwok", "--kubeconfig="+kubeconfig, "--config="+filepath.Join(assets, "kwok-stages.yaml"),
		"--manage-nodes-with-annotation-selector="+kwok.AnnotationNode+"=fake", "--node-lease-duration-seconds=40")
	return kubeconfig
}

func deployment(ns, name, cpu, mem string, nodeSelector map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			NodeSelector: nodeSelector,
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}}}
}

func scale(t *testing.T, kc client.Client, d *appsv1.Deployment, replicas int32) {
	t.Helper()
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	if err := kc.Patch(context.Background(), d, patch); err != nil {
		t.Fatalf("scaling %s to %d: %v", d.Name, replicas, err)
	}
}

func podsOf(ctx context.Context, kc client.Client, ns string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := kc.List(ctx, &pods, client.InNamespace(ns))
	return pods.Items, err
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// requireAssets returns KUBEBUILDER_ASSETS after checking it holds the
// named files; a missing one fails the test (it is not optional here).
func requireAssets(t *testing.T, names ...string) string {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(assets, name)); err != nil || fi.IsDir() {
			t.Fatalf("%s is not in KUBEBUILDER_ASSETS (%s): hack/control-plane.sh builds it; run export KUBEBUILDER_ASSETS=$(hack/control-plane.sh)", name, assets)
		}
	}
	return assets
}

// writeKubeconfig writes a kubeconfig for the test API server's admin.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startBinary runs a binary of KUBEBUILDER_ASSETS until the test ends, when
// it is sent SIGTERM (SIGKILL after 10 s) and waited for; its output goes
// to a file whose tail is logged if the test failed. Exiting before then
// fails the test.
func startBinary(t *testing.T, assets, name string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(assets, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	var stopping atomic.Bool
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if !stopping.Load() {
			t.Errorf("%s exited while the test ran: %v", name, err)
		}
		exited <- err
	}()
	t.Cleanup(func() {
		stopping.Store(true)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			if out, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log (tail):\n%s", name, tail(string(out), 6000))
			}
		}
	})
}
