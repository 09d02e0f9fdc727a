package sim

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// dumpShape sizes a generated kubectl dump.
type dumpShape struct {
	Nodes       int // each with a NodeClaim
	Deployments int
	PodsPerNode int // Deployment pods, plus one pod per node for each DaemonSet
}

// dump50MB is about what `kubectl get nodes,pods,deployments,daemonsets,pdb,
// nodepools,nodeclaims -A -o yaml` prints for a 300-node cluster: 50 MB.
var dump50MB = dumpShape{Nodes: 300, Deployments: 320, PodsPerNode: 21}

// writeKubectlDump writes a deterministic kubectl dump: one v1 List holding
// Nodes, NodeClaims, NodePools, Deployments, DaemonSets, PDBs and Pods bound
// to the nodes (owned by ReplicaSets and DaemonSets, with managedFields and
// status as the API server returns them), then a second document, another
// List with the EC2NodeClass, as `kubectl get ec2nodeclasses -o yaml`
// appended after a "---" gives.
func writeKubectlDump(w io.Writer, s dumpShape) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	g := &dumpGen{w: bw, r: rand.New(rand.NewPCG(16, 50))}
	g.p("apiVersion: v1\nitems:\n")
	g.nodePools()
	g.nodesAndClaims(s.Nodes)
	g.workloads(s)
	g.p("kind: List\nmetadata:\n  resourceVersion: \"\"\n---\napiVersion: v1\nitems:\n")
	g.nodeClass()
	g.p("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	return bw.Flush()
}

type dumpGen struct {
	w     *bufio.Writer
	r     *rand.Rand
	rv    int
	nodes []dumpNode
}

type dumpNode struct {
	name, pool, zone, instanceType, capacityType, ip string
}

var (
	dumpZones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}
	dumpPools = []struct{ name, capacityType string }{{"general", "on-demand"}, {"spot", "spot"}, {"batch", "on-demand"}}
	dumpTypes = []struct {
		name             string
		cpu, memGi, pods int
	}{{"m6i.2xlarge", 8, 32, 58}, {"m6i.4xlarge", 16, 64, 234}, {"c6i.4xlarge", 16, 32, 234}, {"r6i.2xlarge", 8, 64, 58}}
	dumpTeams = []string{"checkout", "payments", "search", "catalog", "identity", "ledger", "ingest", "ml-serving", "notifications", "reports"}
)

func (g *dumpGen) p(format string, args ...any) { fmt.Fprintf(g.w, format, args...) }

func (g *dumpGen) uid() string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", g.r.Uint32(), g.r.Uint32()&0xffff, g.r.Uint32()&0xffff, g.r.Uint32()&0xffff, g.r.Uint64()&0xffffffffffff)
}

// hash is a pod-template-hash or name suffix: Kubernetes' safe alphabet.
func (g *dumpGen) hash(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *dumpGen) resourceVersion() string {
	g.rv += 1 + g.r.IntN(40)
	return fmt.Sprint(1000000 + g.rv)
}

func (g *dumpGen) time(day int) string {
	t := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(day)*24*time.Hour + time.Duration(g.r.IntN(86400))*time.Second)
	return t.Format(time.RFC3339)
}

func (g *dumpGen) nodePools() {
	for i, pl := range dumpPools {
		g.p(`- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata:
    annotations:
      karpenter.sh/nodepool-hash: "%d"
      karpenter.sh/nodepool-hash-version: v3
    creationTimestamp: "%s"
    generation: %d
    managedFields:
    - apiVersion: karpenter.sh/v1
      fieldsType: FieldsV1
      fieldsV1:
        f:spec:
          .: {}
          f:disruption:
            .: {}
            f:budgets: {}
            f:consolidateAfter: {}
            f:consolidationPolicy: {}
          f:limits:
            .: {}
            f:cpu: {}
          f:template:
            .: {}
            f:spec:
              .: {}
              f:expireAfter: {}
              f:nodeClassRef:
                .: {}
                f:group: {}
                f:kind: {}
                f:name: {}
              f:requirements: {}
          f:weight: {}
      manager: argocd-controller
      operation: Apply
      time: "%s"
    - apiVersion: karpenter.sh/v1
      fieldsType: FieldsV1
      fieldsV1:
        f:status:
          .: {}
          f:conditions: {}
          f:nodes: {}
          f:resources:
            .: {}
            f:cpu: {}
            f:memory: {}
            f:pods: {}
      manager: karpenter
      operation: Update
      subresource: status
      time: "%s"
    name: %s
    resourceVersion: "%s"
    uid: %s
  spec:
    disruption:
      budgets:
      - nodes: 10%%
      - duration: 8h0m0s
        nodes: "0"
        reasons:
        - Underutilized
        schedule: 0 9 * * mon-fri
      consolidateAfter: 5m
      consolidationPolicy: WhenEmptyOrUnderutilized
    limits:
      cpu: "4000"
    template:
      metadata:
        labels:
          team: platform
      spec:
        expireAfter: 720h
        nodeClassRef:
          group: karpenter.k8s.aws
          kind: EC2NodeClass
          name: default
        requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values:
          - %s
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values:
          - c
          - m
          - r
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values:
          - "5"
        - key: kubernetes.io/arch
          operator: In
          values:
          - amd64
    weight: %d
  status:
    conditions:
    - lastTransitionTime: "%s"
      message: ""
      observedGeneration: 1
      reason: Ready
      status: "True"
      type: Ready
    nodes: 100
    resources:
      cpu: "1200"
      memory: 4800Gi
      pods: "17400"
`, g.r.Uint64()>>1, g.time(0), 1+i, g.time(0), g.time(60), pl.name, g.resourceVersion(), g.uid(), pl.capacityType, 30-10*i, g.time(0))
	}
}

func (g *dumpGen) nodesAndClaims(n int) {
	for i := 0; i < n; i++ {
		pl := dumpPools[i%len(dumpPools)]
		it := dumpTypes[g.r.IntN(len(dumpTypes))]
		zone := dumpZones[i%len(dumpZones)]
		ip := fmt.Sprintf("10.0.%d.%d", 32+i/200, 10+i%200)
		node := dumpNode{name: "ip-" + strings.ReplaceAll(ip, ".", "-") + ".us-west-2.compute.internal", pool: pl.name, zone: zone,
			instanceType: it.name, capacityType: pl.capacityType, ip: ip}
		g.nodes = append(g.nodes, node)
		claim := pl.name + "-" + g.hash(5)
		instance := fmt.Sprintf("i-0%016x", g.r.Uint64())
		day := g.r.IntN(50)
		created := g.time(day)
		family, size, _ := strings.Cut(it.name, ".")
		labels := fmt.Sprintf(`karpenter.k8s.aws/ec2nodeclass: default
      karpenter.k8s.aws/instance-category: %s
      karpenter.k8s.aws/instance-cpu: "%d"
      karpenter.k8s.aws/instance-cpu-manufacturer: intel
      karpenter.k8s.aws/instance-ebs-bandwidth: "10000"
      karpenter.k8s.aws/instance-encryption-in-transit-supported: "true"
      karpenter.k8s.aws/instance-family: %s
      karpenter.k8s.aws/instance-generation: "6"
      karpenter.k8s.aws/instance-hypervisor: nitro
      karpenter.k8s.aws/instance-memory: "%d"
      karpenter.k8s.aws/instance-network-bandwidth: "12500"
      karpenter.k8s.aws/instance-size: %s
      karpenter.sh/capacity-type: %s
      karpenter.sh/nodepool: %s
      kubernetes.io/arch: amd64
      kubernetes.io/os: linux
      node.kubernetes.io/instance-type: %s
      team: platform
      topology.k8s.aws/zone-id: usw2-az%d
      topology.kubernetes.io/region: us-west-2
      topology.kubernetes.io/zone: %s`, family[:1], it.cpu, family, it.memGi*1024, size, pl.capacityType, pl.name, it.name, 1+i%3, zone)
		allocatable := fmt.Sprintf(`cpu: %dm
      ephemeral-storage: 95551679124
      memory: %dKi
      pods: "%d"`, it.cpu*1000-90-10*it.cpu, it.memGi*1024*1024-1300000, it.pods)
		capacity := fmt.Sprintf(`cpu: "%d"
      ephemeral-storage: 104845292Ki
      memory: %dKi
      pods: "%d"`, it.cpu, it.memGi*1024*1024-400000, it.pods)
		g.p(`- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      alpha.kubernetes.io/provided-node-ip: %[1]s
      csi.volume.kubernetes.io/nodeid: '{"ebs.csi.aws.com":"%[2]s"}'
      karpenter.k8s.aws/ec2nodeclass-hash: "%[3]d"
      karpenter.k8s.aws/ec2nodeclass-hash-version: v4
      karpenter.sh/nodepool-hash: "%[4]d"
      karpenter.sh/nodepool-hash-version: v3
      node.alpha.kubernetes.io/ttl: "0"
      volumes.kubernetes.io/controller-managed-attach-detach: "true"
    creationTimestamp: "%[5]s"
    finalizers:
    - karpenter.sh/termination
    labels:
      beta.kubernetes.io/arch: amd64
      beta.kubernetes.io/instance-type: %[6]s
      beta.kubernetes.io/os: linux
      failure-domain.beta.kubernetes.io/region: us-west-2
      failure-domain.beta.kubernetes.io/zone: %[7]s
      k8s.io/cloud-provider-aws: 6a1f0b7c2d3e4f5061728394a5b6c7d8
      %[8]s
      kubernetes.io/hostname: %[9]s
      node.kubernetes.io/lifecycle: %[10]s
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:annotations:
            .: {}
            f:alpha.kubernetes.io/provided-node-ip: {}
            f:node.alpha.kubernetes.io/ttl: {}
            f:volumes.kubernetes.io/controller-managed-attach-detach: {}
          f:labels:
            .: {}
            f:beta.kubernetes.io/arch: {}
            f:beta.kubernetes.io/os: {}
            f:kubernetes.io/arch: {}
            f:kubernetes.io/hostname: {}
            f:kubernetes.io/os: {}
            f:node.kubernetes.io/instance-type: {}
            f:topology.k8s.aws/zone-id: {}
            f:topology.kubernetes.io/region: {}
            f:topology.kubernetes.io/zone: {}
        f:spec:
          f:providerID: {}
      manager: kubelet
      operation: Update
      time: "%[5]s"
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:finalizers:
            .: {}
            v:"karpenter.sh/termination": {}
          f:labels:
            f:karpenter.k8s.aws/ec2nodeclass: {}
            f:karpenter.sh/capacity-type: {}
            f:karpenter.sh/nodepool: {}
            f:team: {}
      manager: karpenter
      operation: Update
      time: "%[5]s"
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:status:
          f:allocatable:
            f:ephemeral-storage: {}
          f:conditions:
            k:{"type":"DiskPressure"}:
              f:lastHeartbeatTime: {}
            k:{"type":"MemoryPressure"}:
              f:lastHeartbeatTime: {}
            k:{"type":"PIDPressure"}:
              f:lastHeartbeatTime: {}
            k:{"type":"Ready"}:
              f:lastHeartbeatTime: {}
              f:lastTransitionTime: {}
              f:message: {}
              f:reason: {}
              f:status: {}
          f:images: {}
          f:nodeInfo:
            f:bootID: {}
      manager: kubelet
      operation: Update
      subresource: status
      time: "2026-11-20T11:52:07Z"
    name: %[9]s
    resourceVersion: "%[11]s"
    uid: %[12]s
  spec:
    providerID: aws:///%[7]s/%[2]s
  status:
    addresses:
    - address: %[1]s
      type: InternalIP
    - address: %[9]s
      type: InternalDNS
    - address: %[9]s
      type: Hostname
    allocatable:
      %[13]s
    capacity:
      %[14]s
    conditions:
    - lastHeartbeatTime: "2026-11-20T11:52:07Z"
      lastTransitionTime: "%[5]s"
      message: kubelet has sufficient memory available
      reason: KubeletHasSufficientMemory
      status: "False"
      type: MemoryPressure
    - lastHeartbeatTime: "2026-11-20T11:52:07Z"
      lastTransitionTime: "%[5]s"
      message: kubelet has no disk pressure
      reason: KubeletHasNoDiskPressure
      status: "False"
      type: DiskPressure
    - lastHeartbeatTime: "2026-11-20T11:52:07Z"
      lastTransitionTime: "%[5]s"
      message: kubelet has sufficient PID available
      reason: KubeletHasSufficientPID
      status: "False"
      type: PIDPressure
    - lastHeartbeatTime: "2026-11-20T11:52:07Z"
      lastTransitionTime: "%[5]s"
      message: kubelet is posting ready status
      reason: KubeletReady
      status: "True"
      type: Ready
    daemonEndpoints:
      kubeletEndpoint:
        Port: 10250
    images:
`, ip, instance, g.r.Uint64()>>1, g.r.Uint64()>>1, created, it.name, zone, labels, node.name, pl.capacityType, g.resourceVersion(), g.uid(), allocatable, capacity)
		for j := 0; j < 24; j++ {
			repo := dumpTeams[(i+j)%len(dumpTeams)]
			g.p(`    - names:
      - 123456789012.dkr.ecr.us-west-2.amazonaws.com/%[1]s@sha256:%016[2]x%016[3]x%016[4]x%016[5]x
      - 123456789012.dkr.ecr.us-west-2.amazonaws.com/%[1]s:v%[6]d.%[7]d.%[8]d
      sizeBytes: %[9]d
`, repo, g.r.Uint64(), g.r.Uint64(), g.r.Uint64(), g.r.Uint64(), 1+j%4, g.r.IntN(30), g.r.IntN(10), 20000000+g.r.IntN(900000000))
		}
		g.p(`    nodeInfo:
      architecture: amd64
      bootID: %s
      containerRuntimeVersion: containerd://1.7.27
      kernelVersion: 6.1.140-154.222.amzn2023.x86_64
      kubeProxyVersion: v1.33.1-eks-b9c9ed7
      kubeletVersion: v1.33.1-eks-b9c9ed7
      machineID: %032x
      operatingSystem: linux
      osImage: Amazon Linux 2023.7.20250623
      systemUUID: ec2%05x-0000-0000-0000-000000000000
`, g.uid(), g.r.Uint64(), g.r.IntN(1<<20))
		g.p(`- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    annotations:
      compatibility.karpenter.k8s.aws/cluster-name-tagged: "true"
      karpenter.k8s.aws/ec2nodeclass-hash: "%[1]d"
      karpenter.k8s.aws/ec2nodeclass-hash-version: v4
      karpenter.k8s.aws/tagged: "true"
      karpenter.sh/nodepool-hash: "%[2]d"
      karpenter.sh/nodepool-hash-version: v3
    creationTimestamp: "%[3]s"
    finalizers:
    - karpenter.sh/termination
    generateName: %[4]s-
    generation: 1
    labels:
      %[5]s
    name: %[6]s
    ownerReferences:
    - apiVersion: karpenter.sh/v1
      blockOwnerDeletion: true
      kind: NodePool
      name: %[4]s
      uid: %[7]s
    resourceVersion: "%[8]s"
    uid: %[9]s
  spec:
    expireAfter: 720h
    nodeClassRef:
      group: karpenter.k8s.aws
      kind: EC2NodeClass
      name: default
    requirements:
    - key: karpenter.k8s.aws/instance-generation
      operator: Gt
      values:
      - "5"
    - key: kubernetes.io/arch
      operator: In
      values:
      - amd64
    - key: karpenter.sh/nodepool
      operator: In
      values:
      - %[4]s
    - key: node.kubernetes.io/instance-type
      operator: In
      values:
      - c6i.4xlarge
      - m6i.2xlarge
      - m6i.4xlarge
      - r6i.2xlarge
    - key: karpenter.sh/capacity-type
      operator: In
      values:
      - %[10]s
    - key: karpenter.k8s.aws/instance-category
      operator: In
      values:
      - c
      - m
      - r
    resources:
      requests:
        cpu: 3150m
        memory: 7800Mi
        pods: "21"
  status:
    allocatable:
      %[11]s
    capacity:
      %[12]s
    conditions:
    - lastTransitionTime: "%[3]s"
      message: ""
      observedGeneration: 1
      reason: Consolidatable
      status: "True"
      type: Consolidatable
    - lastTransitionTime: "%[3]s"
      message: ""
      observedGeneration: 1
      reason: Initialized
      status: "True"
      type: Initialized
    - lastTransitionTime: "%[3]s"
      message: ""
      observedGeneration: 1
      reason: Launched
      status: "True"
      type: Launched
    - lastTransitionTime: "%[3]s"
      message: ""
      observedGeneration: 1
      reason: Ready
      status: "True"
      type: Ready
    - lastTransitionTime: "%[3]s"
      message: ""
      observedGeneration: 1
      reason: Registered
      status: "True"
      type: Registered
    imageID: ami-0%016[13]x
    lastPodEventTime: "2026-11-20T10:01:44Z"
    nodeName: %[14]s
    providerID: aws:///%[15]s/%[16]s
`, g.r.Uint64()>>1, g.r.Uint64()>>1, created, pl.name, labels, claim, g.uid(), g.resourceVersion(), g.uid(), pl.capacityType,
			allocatable, capacity, g.r.Uint64(), node.name, zone, instance)
	}
}

func (g *dumpGen) nodeClass() {
	g.p(`- apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata:
    annotations:
      karpenter.k8s.aws/ec2nodeclass-hash: "15535182697325354914"
      karpenter.k8s.aws/ec2nodeclass-hash-version: v4
    creationTimestamp: "2026-10-01T00:00:00Z"
    finalizers:
    - karpenter.k8s.aws/termination
    generation: 1
    name: default
    resourceVersion: "%s"
    uid: %s
  spec:
    amiSelectorTerms:
    - alias: al2023@v20250623
    metadataOptions:
      httpEndpoint: enabled
      httpProtocolIPv6: disabled
      httpPutResponseHopLimit: 1
      httpTokens: required
    role: KarpenterNodeRole-prod
    securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: prod
    subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: prod
    tags:
      team: platform
  status:
    amis:
    - id: ami-0123456789abcdef0
      name: amazon-eks-node-al2023-x86_64-standard-1.33-v20250623
      requirements:
      - key: kubernetes.io/arch
        operator: In
        values:
        - amd64
    conditions:
    - lastTransitionTime: "2026-10-01T00:00:10Z"
      message: ""
      reason: Ready
      status: "True"
      type: Ready
    instanceProfile: prod_1234567890
    securityGroups:
    - id: sg-0123456789abcdef0
      name: eks-cluster-sg-prod
    subnets:
    - id: subnet-0123456789abcdef0
      zone: us-west-2a
      zoneID: usw2-az1
`, g.resourceVersion(), g.uid())
}

type dumpApp struct {
	name, namespace, team, hash, rsUID string
	cpu, mem                           int // millicores, MiB
	replicas                           int
}

func (g *dumpGen) workloads(s dumpShape) {
	var apps []dumpApp
	for i := 0; i < s.Deployments; i++ {
		team := dumpTeams[i%len(dumpTeams)]
		apps = append(apps, dumpApp{name: fmt.Sprintf("%s-%s-%d", team, []string{"api", "worker", "web", "cron", "gateway"}[i%5], i),
			namespace: team, team: team, hash: g.hash(10), rsUID: g.uid(), cpu: 50 * (1 + g.r.IntN(20)), mem: 128 * (1 + g.r.IntN(16))})
	}
	total := s.Nodes * s.PodsPerNode
	for i := 0; i < total; i++ {
		apps[i%len(apps)].replicas++
	}
	for _, a := range apps {
		g.deployment(a)
	}
	for i, a := range apps {
		if i%3 == 0 {
			g.pdb(a)
		}
	}
	daemons := []dumpApp{
		{name: "aws-node", namespace: "kube-system", team: "platform", cpu: 25, mem: 64},
		{name: "kube-proxy", namespace: "kube-system", team: "platform", cpu: 100, mem: 64},
		{name: "node-exporter", namespace: "monitoring", team: "platform", cpu: 50, mem: 64},
	}
	for i := range daemons {
		daemons[i].hash = g.hash(10)
		daemons[i].rsUID = g.uid()
		g.daemonSet(daemons[i])
	}
	// Pods, by namespace and name as kubectl lists them; each app's
	// replicas spread over the nodes round-robin.
	n := 0
	for _, a := range apps {
		for k := 0; k < a.replicas; k++ {
			g.pod(a, "ReplicaSet", a.name+"-"+a.hash, a.name+"-"+a.hash+"-"+g.hash(5), g.nodes[n%len(g.nodes)])
			n++
		}
	}
	for _, d := range daemons {
		for _, node := range g.nodes {
			g.pod(d, "DaemonSet", d.name, d.name+"-"+g.hash(5), node)
		}
	}
}

func (g *dumpGen) deployment(a dumpApp) {
	g.p(`- apiVersion: apps/v1
  kind: Deployment
  metadata:
    annotations:
      deployment.kubernetes.io/revision: "%[1]d"
      meta.helm.sh/release-name: %[2]s
      meta.helm.sh/release-namespace: %[3]s
    creationTimestamp: "%[4]s"
    generation: %[1]d
    labels:
      app.kubernetes.io/instance: %[2]s
      app.kubernetes.io/managed-by: Helm
      app.kubernetes.io/name: %[2]s
      app.kubernetes.io/part-of: %[5]s
      helm.sh/chart: %[5]s-1.4.2
    managedFields:
    - apiVersion: apps/v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:annotations:
            .: {}
            f:meta.helm.sh/release-name: {}
            f:meta.helm.sh/release-namespace: {}
          f:labels:
            .: {}
            f:app.kubernetes.io/instance: {}
            f:app.kubernetes.io/managed-by: {}
            f:app.kubernetes.io/name: {}
        f:spec:
          f:progressDeadlineSeconds: {}
          f:replicas: {}
          f:revisionHistoryLimit: {}
          f:selector: {}
          f:strategy:
            f:rollingUpdate:
              .: {}
              f:maxSurge: {}
              f:maxUnavailable: {}
            f:type: {}
          f:template:
            f:metadata:
              f:labels:
                .: {}
                f:app.kubernetes.io/instance: {}
                f:app.kubernetes.io/name: {}
            f:spec:
              f:containers:
                k:{"name":"app"}:
                  .: {}
                  f:image: {}
                  f:imagePullPolicy: {}
                  f:name: {}
                  f:resources:
                    .: {}
                    f:limits:
                      .: {}
                      f:memory: {}
                    f:requests:
                      .: {}
                      f:cpu: {}
                      f:memory: {}
      manager: helm
      operation: Update
      time: "%[4]s"
    - apiVersion: apps/v1
      fieldsType: FieldsV1
      fieldsV1:
        f:status:
          f:availableReplicas: {}
          f:conditions: {}
          f:observedGeneration: {}
          f:readyReplicas: {}
          f:replicas: {}
          f:updatedReplicas: {}
      manager: kube-controller-manager
      operation: Update
      subresource: status
      time: "2026-11-20T09:12:44Z"
    name: %[2]s
    namespace: %[3]s
    resourceVersion: "%[6]s"
    uid: %[7]s
  spec:
    progressDeadlineSeconds: 600
    replicas: %[8]d
    revisionHistoryLimit: 10
    selector:
      matchLabels:
        app.kubernetes.io/instance: %[2]s
        app.kubernetes.io/name: %[2]s
    strategy:
      rollingUpdate:
        maxSurge: 25%%
        maxUnavailable: 25%%
      type: RollingUpdate
    template:
      metadata:
        annotations:
          prometheus.io/port: "9090"
          prometheus.io/scrape: "true"
        creationTimestamp: null
        labels:
          app.kubernetes.io/instance: %[2]s
          app.kubernetes.io/name: %[2]s
          team: %[5]s
      spec:
        containers:
        - image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/%[5]s:v2.%[1]d.0
          imagePullPolicy: IfNotPresent
          name: app
          ports:
          - containerPort: 8080
            name: http
            protocol: TCP
          resources:
            limits:
              memory: %[9]dMi
            requests:
              cpu: %[10]dm
              memory: %[9]dMi
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
        dnsPolicy: ClusterFirst
        restartPolicy: Always
        schedulerName: default-scheduler
        securityContext: {}
        terminationGracePeriodSeconds: 30
        topologySpreadConstraints:
        - labelSelector:
            matchLabels:
              app.kubernetes.io/name: %[2]s
          maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: ScheduleAnyway
  status:
    availableReplicas: %[8]d
    conditions:
    - lastTransitionTime: "%[4]s"
      lastUpdateTime: "%[4]s"
      message: Deployment has minimum availability.
      reason: MinimumReplicasAvailable
      status: "True"
      type: Available
    - lastTransitionTime: "%[4]s"
      lastUpdateTime: "2026-11-20T09:12:44Z"
      message: ReplicaSet "%[2]s-%[11]s" has successfully progressed.
      reason: NewReplicaSetAvailable
      status: "True"
      type: Progressing
    observedGeneration: %[1]d
    readyReplicas: %[8]d
    replicas: %[8]d
    updatedReplicas: %[8]d
`, 1+g.r.IntN(9), a.name, a.namespace, g.time(g.r.IntN(30)), a.team, g.resourceVersion(), g.uid(), a.replicas, a.mem, a.cpu, a.hash)
}

func (g *dumpGen) pdb(a dumpApp) {
	g.p(`- apiVersion: policy/v1
  kind: PodDisruptionBudget
  metadata:
    creationTimestamp: "%[1]s"
    generation: 1
    labels:
      app.kubernetes.io/name: %[2]s
    name: %[2]s
    namespace: %[3]s
    resourceVersion: "%[4]s"
    uid: %[5]s
  spec:
    maxUnavailable: 1
    selector:
      matchLabels:
        app.kubernetes.io/name: %[2]s
  status:
    conditions:
    - lastTransitionTime: "%[1]s"
      message: ""
      observedGeneration: 1
      reason: SufficientPods
      status: "True"
      type: DisruptionAllowed
    currentHealthy: %[6]d
    desiredHealthy: %[7]d
    disruptionsAllowed: 1
    expectedPods: %[6]d
    observedGeneration: 1
`, g.time(g.r.IntN(30)), a.name, a.namespace, g.resourceVersion(), g.uid(), a.replicas, a.replicas-1)
}

func (g *dumpGen) daemonSet(a dumpApp) {
	g.p(`- apiVersion: apps/v1
  kind: DaemonSet
  metadata:
    annotations:
      deprecated.daemonset.template.generation: "3"
    creationTimestamp: "2026-10-01T00:00:00Z"
    generation: 3
    labels:
      app.kubernetes.io/name: %[1]s
    name: %[1]s
    namespace: %[2]s
    resourceVersion: "%[3]s"
    uid: %[4]s
  spec:
    revisionHistoryLimit: 10
    selector:
      matchLabels:
        app.kubernetes.io/name: %[1]s
    template:
      metadata:
        creationTimestamp: null
        labels:
          app.kubernetes.io/name: %[1]s
      spec:
        containers:
        - image: 602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/%[1]s:v1.19.5
          imagePullPolicy: IfNotPresent
          name: app
          resources:
            requests:
              cpu: %[5]dm
              memory: %[6]dMi
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
        dnsPolicy: ClusterFirst
        hostNetwork: true
        priorityClassName: system-node-critical
        restartPolicy: Always
        schedulerName: default-scheduler
        securityContext: {}
        terminationGracePeriodSeconds: 30
        tolerations:
        - operator: Exists
    updateStrategy:
      rollingUpdate:
        maxSurge: 0
        maxUnavailable: 10%%
      type: RollingUpdate
  status:
    currentNumberScheduled: %[7]d
    desiredNumberScheduled: %[7]d
    numberAvailable: %[7]d
    numberMisscheduled: 0
    numberReady: %[7]d
    observedGeneration: 3
    updatedNumberScheduled: %[7]d
`, a.name, a.namespace, g.resourceVersion(), g.uid(), a.cpu, a.mem, len(g.nodes))
}

func (g *dumpGen) pod(a dumpApp, ownerKind, owner, name string, node dumpNode) {
	podIP := fmt.Sprintf("10.0.%d.%d", 64+g.r.IntN(64), 1+g.r.IntN(254))
	started := g.time(40 + g.r.IntN(10))
	token := "kube-api-access-" + g.hash(5)
	g.p(`- apiVersion: v1
  kind: Pod
  metadata:
    annotations:
      prometheus.io/port: "9090"
      prometheus.io/scrape: "true"
    creationTimestamp: "%[1]s"
    generateName: %[2]s-
    labels:
      app.kubernetes.io/instance: %[3]s
      app.kubernetes.io/name: %[3]s
      pod-template-hash: %[4]s
      team: %[5]s
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:annotations:
            .: {}
            f:prometheus.io/port: {}
            f:prometheus.io/scrape: {}
          f:generateName: {}
          f:labels:
            .: {}
            f:app.kubernetes.io/instance: {}
            f:app.kubernetes.io/name: {}
            f:pod-template-hash: {}
            f:team: {}
          f:ownerReferences:
            .: {}
            k:{"uid":"%[6]s"}: {}
        f:spec:
          f:containers:
            k:{"name":"app"}:
              .: {}
              f:image: {}
              f:imagePullPolicy: {}
              f:name: {}
              f:ports:
                .: {}
                k:{"containerPort":8080,"protocol":"TCP"}:
                  .: {}
                  f:containerPort: {}
                  f:name: {}
                  f:protocol: {}
              f:resources:
                .: {}
                f:limits:
                  .: {}
                  f:memory: {}
                f:requests:
                  .: {}
                  f:cpu: {}
                  f:memory: {}
              f:terminationMessagePath: {}
              f:terminationMessagePolicy: {}
          f:dnsPolicy: {}
          f:enableServiceLinks: {}
          f:restartPolicy: {}
          f:schedulerName: {}
          f:securityContext: {}
          f:terminationGracePeriodSeconds: {}
      manager: kube-controller-manager
      operation: Update
      time: "%[1]s"
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:status:
          f:conditions:
            k:{"type":"ContainersReady"}:
              .: {}
              f:status: {}
            k:{"type":"Ready"}:
              .: {}
              f:status: {}
          f:containerStatuses: {}
          f:hostIP: {}
          f:hostIPs: {}
          f:phase: {}
          f:podIP: {}
          f:podIPs:
            .: {}
            k:{"ip":"%[7]s"}:
              .: {}
              f:ip: {}
          f:startTime: {}
      manager: kubelet
      operation: Update
      subresource: status
      time: "%[8]s"
    name: %[9]s
    namespace: %[10]s
    ownerReferences:
    - apiVersion: apps/v1
      blockOwnerDeletion: true
      controller: true
      kind: %[11]s
      name: %[2]s
      uid: %[6]s
    resourceVersion: "%[12]s"
    uid: %[13]s
  spec:
    containers:
    - env:
      - name: POD_NAME
        valueFrom:
          fieldRef:
            apiVersion: v1
            fieldPath: metadata.name
      image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/%[5]s:v2.4.0
      imagePullPolicy: IfNotPresent
      name: app
      ports:
      - containerPort: 8080
        name: http
        protocol: TCP
      resources:
        limits:
          memory: %[14]dMi
        requests:
          cpu: %[15]dm
          memory: %[14]dMi
      terminationMessagePath: /dev/termination-log
      terminationMessagePolicy: File
      volumeMounts:
      - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
        name: %[16]s
        readOnly: true
    dnsPolicy: ClusterFirst
    enableServiceLinks: true
    nodeName: %[17]s
    preemptionPolicy: PreemptLowerPriority
    priority: 0
    restartPolicy: Always
    schedulerName: default-scheduler
    securityContext: {}
    serviceAccount: default
    serviceAccountName: default
    terminationGracePeriodSeconds: 30
    tolerations:
    - effect: NoExecute
      key: node.kubernetes.io/not-ready
      operator: Exists
      tolerationSeconds: 300
    - effect: NoExecute
      key: node.kubernetes.io/unreachable
      operator: Exists
      tolerationSeconds: 300
    topologySpreadConstraints:
    - labelSelector:
        matchLabels:
          app.kubernetes.io/name: %[3]s
      maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: ScheduleAnyway
    volumes:
    - name: %[16]s
      projected:
        defaultMode: 420
        sources:
        - serviceAccountToken:
            expirationSeconds: 3607
            path: token
        - configMap:
            items:
            - key: ca.crt
              path: ca.crt
            name: kube-root-ca.crt
        - downwardAPI:
            items:
            - fieldRef:
                apiVersion: v1
                fieldPath: metadata.namespace
              path: namespace
  status:
    conditions:
    - lastProbeTime: null
      lastTransitionTime: "%[8]s"
      status: "True"
      type: PodReadyToStartContainers
    - lastProbeTime: null
      lastTransitionTime: "%[8]s"
      status: "True"
      type: Initialized
    - lastProbeTime: null
      lastTransitionTime: "%[8]s"
      status: "True"
      type: Ready
    - lastProbeTime: null
      lastTransitionTime: "%[8]s"
      status: "True"
      type: ContainersReady
    - lastProbeTime: null
      lastTransitionTime: "%[8]s"
      status: "True"
      type: PodScheduled
    containerStatuses:
    - containerID: containerd://%016[18]x%016[19]x%016[20]x%016[21]x
      image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/%[5]s:v2.4.0
      imageID: 123456789012.dkr.ecr.us-west-2.amazonaws.com/%[5]s@sha256:%016[19]x%016[21]x%016[18]x%016[20]x
      lastState: {}
      name: app
      ready: true
      restartCount: 0
      started: true
      state:
        running:
          startedAt: "%[8]s"
    hostIP: %[22]s
    hostIPs:
    - ip: %[22]s
    phase: Running
    podIP: %[7]s
    podIPs:
    - ip: %[7]s
    qosClass: Burstable
    startTime: "%[8]s"
`, g.time(g.r.IntN(40)), owner, a.name, a.hash, a.team, a.rsUID, podIP, started, name, a.namespace, ownerKind,
		g.resourceVersion(), g.uid(), a.mem, a.cpu, token, node.name, g.r.Uint64(), g.r.Uint64(), g.r.Uint64(), g.r.Uint64(), node.ip)
}

// BenchmarkLoadDump50MB loads a 50 MB kubectl dump (300 nodes and their
// NodeClaims, 3 NodePools, 8,700 pods with managedFields and status) as
// `joiner simulate DIR` does. peak-heap-MB is the largest heap in use seen
// while loading (sampled), a floor for the process's RSS.
func BenchmarkLoadDump50MB(b *testing.B) {
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "dump.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := writeKubectlDump(f, dump50MB); err != nil {
		b.Fatal(err)
	}
	st, _ := f.Stat()
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	size := float64(st.Size()) / 1e6
	fsys := os.DirFS(dir)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := sampleHeap()
	b.ResetTimer()
	start := time.Now()
	var in *scenario.Input
	for i := 0; i < b.N; i++ {
		in, err = scenario.Load(fsys, ".", "dump")
		if err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start).Seconds() / float64(b.N)
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(size, "MB-input")
	b.ReportMetric(wall, "wall-s/op")
	b.ReportMetric(size/wall, "MB/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/1e6, "MB-alloc/op")
	b.ReportMetric(float64(peak())/1e6, "peak-heap-MB")
	if len(in.NodePools) != 3 || len(in.NodeClasses) != 1 || len(in.Deployments) != dump50MB.Deployments || len(in.DaemonSets) != 3 {
		b.Fatalf("loaded %d NodePools, %d EC2NodeClasses, %d Deployments, %d DaemonSets", len(in.NodePools), len(in.NodeClasses), len(in.Deployments), len(in.DaemonSets))
	}
}

// sampleHeap samples HeapInuse every 10 ms until the returned function is
// called, which returns the largest value seen.
func sampleHeap() func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); <-stopped; return peak.Load() }
}
