// Command kwokrun runs upstream Karpenter's own kwok controller (built by
// hack/karpenter.sh) on a real control plane (built by
// hack/control-plane.sh): kube-apiserver and etcd (controller-runtime's
// envtest), kube-scheduler, kube-controller-manager and kwok's controller,
// with the same flags as Joiner's integration tests. It installs the
// release's CRDs, creates a KWOKNodeClass "default", a NodePool and a
// Deployment, and waits until every replica runs, then prints the
// NodeClaims and Nodes Karpenter made:
//
//	export KUBEBUILDER_ASSETS=$(hack/control-plane.sh)
//	K=$(hack/karpenter.sh)
//	go run ./hack/karpenter/instancetypes --out /tmp/karpenter-instance-types.json
//	go run ./hack/karpenter/kwokrun --karpenter "$K" --instance-types /tmp/karpenter-instance-types.json
//
// --keep leaves everything running (until interrupted) with the admin
// kubeconfig at --kubeconfig, for kubectl or another workload. Logs of
// every process are in --logs. See docs/karpenter-kwok.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// defaultObjects are the benchmark's NodePool (on-demand c, m and r of
// generation above 4, as Joiner's) and the KWOKNodeClass it references.
const defaultObjects = `apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.kwok.sh
        kind: KWOKNodeClass
        name: default
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
      expireAfter: Never
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
`

type config struct {
	assets, karpenter, instanceTypes, objects, kubeconfig, logs, featureGates, logLevel string
	replicas                                                                            int
	cpu, memory                                                                         string
	timeout                                                                             time.Duration
	keep                                                                                bool
}

func main() {
	var c config
	// Its own flag set: controller-runtime registers --kubeconfig on the default one.
	flag := flag.NewFlagSet("kwokrun", flag.ExitOnError)
	flag.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "hack/control-plane.sh's directory (default $KUBEBUILDER_ASSETS)")
	flag.StringVar(&c.karpenter, "karpenter", "", "hack/karpenter.sh's directory (karpenter-kwok and crds/)")
	flag.StringVar(&c.instanceTypes, "instance-types", "", "instance-types file for INSTANCE_TYPES_FILE_PATH (hack/karpenter/instancetypes); empty: upstream's embedded types")
	flag.StringVar(&c.objects, "objects", "", "YAML file of the KWOKNodeClass and NodePools to create instead of the built-in ones (on-demand c/m/r, generation > 4)")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "write the admin kubeconfig here (default: in --logs)")
	flag.StringVar(&c.logs, "logs", "", "directory for the processes' logs (default: a new temporary one)")
	flag.StringVar(&c.featureGates, "feature-gates", "", "Karpenter's FEATURE_GATES (empty: its defaults)")
	flag.StringVar(&c.logLevel, "log-level", "info", "Karpenter's LOG_LEVEL: debug, info or error")
	flag.IntVar(&c.replicas, "replicas", 20, "replicas of the Deployment (0: create none)")
	flag.StringVar(&c.cpu, "cpu", "1", "CPU request of each replica")
	flag.StringVar(&c.memory, "memory", "128Mi", "memory request of each replica")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "how long to wait for every replica to run")
	flag.BoolVar(&c.keep, "keep", false, "keep everything running until interrupted")
	_ = flag.Parse(os.Args[1:])
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "kwokrun:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.assets == "" || c.karpenter == "" {
		return errors.New("--assets (or KUBEBUILDER_ASSETS) and --karpenter are required: see the command's doc")
	}
	for _, f := range []string{filepath.Join(c.assets, "kube-scheduler"), filepath.Join(c.assets, "kube-controller-manager"),
		filepath.Join(c.assets, "kwok"), filepath.Join(c.assets, "kwok-stages.yaml"), filepath.Join(c.karpenter, "karpenter-kwok")} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w (hack/control-plane.sh and hack/karpenter.sh build it)", f, err)
		}
	}
	var err error
	if c.logs == "" {
		if c.logs, err = os.MkdirTemp("", "kwokrun-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(c.logs, 0o755); err != nil {
		return err
	}
	if c.kubeconfig == "" {
		c.kubeconfig = filepath.Join(c.logs, "kubeconfig")
	}
	objects := []byte(defaultObjects)
	if c.objects != "" {
		if objects, err = os.ReadFile(c.objects); err != nil {
			return err
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	say("logs in %s", c.logs)
	env := &envtest.Environment{
		BinaryAssetsDirectory:    c.assets,
		CRDDirectoryPaths:        []string{filepath.Join(c.karpenter, "crds")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			say("stopping kube-apiserver and etcd: %v", err)
		}
	}()
	say("kube-apiserver %s up, CRDs of %s installed", cfg.Host, filepath.Join(c.karpenter, "crds"))
	if err := writeKubeconfig(cfg, c.kubeconfig); err != nil {
		return err
	}
	say("admin kubeconfig: %s", c.kubeconfig)
	kc := c.kubeconfig
	var procs []*proc
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
	}()
	start := func(name, bin string, env []string, args ...string) error {
		p, err := startProc(name, bin, filepath.Join(c.logs, name+".log"), env, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return err
	}
	if err := start("kube-scheduler", filepath.Join(c.assets, "kube-scheduler"), nil,
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--leader-elect=false", "--secure-port=0", "-v=2"); err != nil {
		return err
	}
	if err := start("kube-controller-manager", filepath.Join(c.assets, "kube-controller-manager"), nil,
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--controllers=deployment,replicaset,nodelifecycle,garbagecollector,disruption",
		"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false", "-v=2"); err != nil {
		return err
	}
	// Upstream's kwok Nodes carry the annotation (and label)
	// kwok.x-k8s.io/node=fake, as Joiner's do.
	if err := start("kwok", filepath.Join(c.assets, "kwok"), nil,
		"--kubeconfig="+kc, "--config="+filepath.Join(c.assets, "kwok-stages.yaml"),
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--node-lease-duration-seconds=40"); err != nil {
		return err
	}

	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	if err := apply(ctx, k8s, objects); err != nil {
		return err
	}

	ports, err := freePorts(2)
	if err != nil {
		return fmt.Errorf("no free port for Karpenter's metrics and health probe: %w", err)
	}
	metricsPort, healthPort := ports[0], ports[1]
	kenv := []string{
		"KUBECONFIG=" + kc,
		"DISABLE_LEADER_ELECTION=true",
		fmt.Sprintf("METRICS_PORT=%d", metricsPort),
		fmt.Sprintf("HEALTH_PROBE_PORT=%d", healthPort),
		"LOG_LEVEL=" + c.logLevel,
	}
	if c.instanceTypes != "" {
		abs, err := filepath.Abs(c.instanceTypes)
		if err != nil {
			return err
		}
		kenv = append(kenv, "INSTANCE_TYPES_FILE_PATH="+abs)
	}
	if c.featureGates != "" {
		kenv = append(kenv, "FEATURE_GATES="+c.featureGates)
	}
	say("starting karpenter-kwok: %s", strings.Join(kenv, " "))
	if err := start("karpenter-kwok", filepath.Join(c.karpenter, "karpenter-kwok"), kenv); err != nil {
		return err
	}

	if c.replicas > 0 {
		if err := workload(ctx, k8s, c, procs); err != nil {
			return err
		}
	}
	if c.keep {
		say("running; KUBECONFIG=%s; interrupt to stop", kc)
		<-ctx.Done()
	}
	return nil
}

// workload creates the Deployment and waits for every replica to run.
func workload(ctx context.Context, k8s client.Client, c config, procs []*proc) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}
	if err := client.IgnoreAlreadyExists(k8s.Create(ctx, ns)); err != nil {
		return err
	}
	labels := map[string]string{"app": "inflate"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "inflate", Namespace: ns.Name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(c.replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(c.cpu), corev1.ResourceMemory: resource.MustParse(c.memory)}}}}}}}}
	began := time.Now()
	if err := k8s.Create(ctx, d); err != nil {
		return err
	}
	say("Deployment bench/inflate: %d replicas of %s CPU, %s memory", c.replicas, c.cpu, c.memory)
	deadline := time.After(c.timeout)
	last := ""
	for {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns.Name)); err != nil {
			return err
		}
		running, bound := 0, 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		claims, err := list(ctx, k8s, "NodeClaim")
		if err != nil {
			return err
		}
		var nodes corev1.NodeList
		if err := k8s.List(ctx, &nodes); err != nil {
			return err
		}
		line := fmt.Sprintf("pods %d, bound %d, running %d; NodeClaims %d; Nodes %d (ready %d)",
			len(pods.Items), bound, running, len(claims), len(nodes.Items), countReady(nodes.Items))
		if line != last {
			say("%6.1fs %s", time.Since(began).Seconds(), line)
			last = line
		}
		if running == c.replicas && len(pods.Items) == c.replicas {
			say("all %d replicas running after %.1fs", c.replicas, time.Since(began).Seconds())
			return report(ctx, k8s, pods.Items)
		}
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%s exited: see %s", p.name, p.log)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			_ = report(ctx, k8s, pods.Items)
			return fmt.Errorf("not every replica ran within %s", c.timeout)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func countReady(nodes []corev1.Node) int {
	n := 0
	for _, node := range nodes {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// report prints the NodeClaims and Nodes, and the pods on each Node.
func report(ctx context.Context, k8s client.Client, pods []corev1.Pod) error {
	claims, err := list(ctx, k8s, "NodeClaim")
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODECLAIM\tTYPE\tZONE\tCAPACITY\tNODE\tCONDITIONS")
	for _, nc := range claims {
		l := nc.GetLabels()
		node, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName")
		conds, _, _ := unstructured.NestedSlice(nc.Object, "status", "conditions")
		var ok []string
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] == "True" {
				ok = append(ok, fmt.Sprint(m["type"]))
			}
		}
		sort.Strings(ok)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", nc.GetName(), l[corev1.LabelInstanceTypeStable], l[corev1.LabelTopologyZone],
			l["karpenter.sh/capacity-type"], node, strings.Join(ok, ","))
	}
	_ = w.Flush()
	var nodes corev1.NodeList
	if err := k8s.List(ctx, &nodes); err != nil {
		return err
	}
	onNode := map[string]int{}
	for _, p := range pods {
		onNode[p.Spec.NodeName]++
	}
	fmt.Fprintln(w, "NODE\tTYPE\tREADY\tALLOCATABLE CPU\tMEMORY\tPODS\tPRICE\tTAINTS\tBENCH PODS")
	for _, n := range nodes.Items {
		a := n.Status.Allocatable
		var taints []string
		for _, t := range n.Spec.Taints {
			taints = append(taints, t.Key)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\n", n.Name, n.Labels[corev1.LabelInstanceTypeStable], countReady([]corev1.Node{n}),
			a.Cpu(), a.Memory(), a.Pods(), n.Labels["eks-node-viewer/instance-price"], strings.Join(taints, ","), onNode[n.Name])
	}
	return w.Flush()
}

func list(ctx context.Context, k8s client.Client, kind string) ([]unstructured.Unstructured, error) {
	var l unstructured.UnstructuredList
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: kind + "List"})
	if err := k8s.List(ctx, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// apply creates every object of a multi-document YAML file.
func apply(ctx context.Context, k8s client.Client, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := k8s.Create(ctx, &u); err != nil {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		say("created %s %s", u.GetKind(), u.GetName())
	}
}

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// freePorts are n ports free now (Karpenter binds them on every address).
func freePorts(n int) ([]int, error) {
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

type proc struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
}

func startProc(name, bin, logPath string, env []string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	say("started %s (pid %d), log %s", name, cmd.Process.Pid, logPath)
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, and SIGKILL after 10 s.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
