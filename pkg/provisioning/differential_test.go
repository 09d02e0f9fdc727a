package provisioning

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// differentialBatches is how many seeded batches the differential tests
// generate: go test ./pkg/provisioning/ -args -differential-batches=1000.
var differentialBatches = flag.Int("differential-batches", 48, "seeded batches TestDecisionsDifferential and TestConcurrentSolveIsSequential generate")

// TestDecisionsDifferential plans generated batches under both Decisions.
// Joiner's must place at least as many pods as Karpenter's, never leave a
// Deployment's replica pending that Karpenter's places, and, placing as
// many, never cost more. Equality both ways cannot be asked for: where a
// NodePool's limits bind, or pods need room beside their affinity targets,
// a tighter packing places pods a looser one strands.
func TestDecisionsDifferential(t *testing.T) {
	batches := *differentialBatches
	cheaper, more := 0, 0
	for seed := int64(1); seed <= int64(batches); seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			b := generateBatch(rand.New(rand.NewSource(seed)))
			joiner, karpenter := b.solve(DecisionsJoiner), b.solve(DecisionsKarpenter)
			for d, res := range map[Decisions]*Results{DecisionsJoiner: joiner, DecisionsKarpenter: karpenter} {
				requireEachPodOnce(t, d, b.snap.Pods, res)
				requireFeasible(t, d, res)
				requireReservationsKept(t, d, b.snap, res)
				requireDevicesKept(t, d, b.snap, res)
			}
			nj, nk := len(joiner.Unschedulable), len(karpenter.Unschedulable)
			switch jp, kp := joiner.Price(), karpenter.Price(); {
			case nj > nk:
				t.Errorf("%d pods pending under joiner's decisions, %d under karpenter's", nj, nk)
			case nj < nk:
				more++
			case jp > kp+1e-9:
				t.Errorf("joiner's plan costs %.4f USD/h, karpenter's %.4f, for the same pods", jp, kp)
			case jp < kp-1e-9:
				cheaper++
			}
			pendingJ, pendingK := pendingByApp(joiner), pendingByApp(karpenter)
			if limitsBind(joiner) || limitsBind(karpenter) {
				return // which Deployment the limits leave out is the order's choice
			}
			if reserves(joiner) || reserves(karpenter) {
				// So is which one takes the reservations, which are a count
				// as limits are, and which one a used-up reservation
				// leaves for the next pass.
				return
			}
			for app, reasons := range pendingJ {
				if len(reasons) > len(pendingK[app]) {
					t.Errorf("%s: %d pods pending under joiner's decisions (%s), %d under karpenter's", app, len(reasons), reasons[0], len(pendingK[app]))
				}
			}
		})
	}
	t.Logf("of %d batches, joiner's decisions placed more pods in %d and the same pods more cheaply in %d", batches, more, cheaper)
}

// reserves says the plan launches into capacity reservations, or some pod
// of it waits for the next pass because the reservations it could use
// were all held by the plan's claims.
func reserves(res *Results) bool {
	for _, nc := range res.NewNodeClaims {
		if ct, _ := heldReservations(nc); ct != "" {
			return true
		}
	}
	return slices.ContainsFunc(res.Unschedulable, (*PodError).Deferred)
}

// limitsBind says a NodePool's limits left some pod of the plan pending.
func limitsBind(res *Results) bool {
	for _, e := range res.Unschedulable {
		for _, code := range e.CodeByNodePool {
			if code == ReasonLimits {
				return true
			}
		}
	}
	return false
}

type batch struct{ snap *Snapshot }

func (b *batch) solve(d Decisions) *Results {
	snap := *b.snap
	snap.Policy.Decisions = d
	return Solve(context.Background(), &snap)
}

// pendingByApp lists the reasons of the pods left pending per app label.
func pendingByApp(res *Results) map[string][]string {
	out := map[string][]string{}
	for _, e := range res.Unschedulable {
		out[e.Pod.Labels["app"]] = append(out[e.Pod.Labels["app"]], e.Reason)
	}
	return out
}

// requireEachPodOnce: every pending pod of the batch is on exactly one
// claim or node, or unschedulable.
func requireEachPodOnce(t *testing.T, d Decisions, pods []*corev1.Pod, res *Results) {
	t.Helper()
	seen := map[*corev1.Pod]int{}
	for _, nc := range res.NewNodeClaims {
		for _, p := range nc.Pods {
			seen[p]++
		}
	}
	for _, e := range res.ExistingNodes {
		for _, p := range e.Pods {
			seen[p]++
		}
	}
	for _, e := range res.Unschedulable {
		seen[e.Pod]++
	}
	for _, p := range pods {
		if seen[p] != 1 {
			t.Errorf("%s: pod %s accounted for %d times", d, p.Name, seen[p])
		}
	}
}

// requireFeasible: every instance type a claim lists holds its pods (the
// cheapest with its DaemonSets too), satisfies their node selectors, and no two pods that keep
// apart by hostname share it.
func requireFeasible(t *testing.T, d Decisions, res *Results) {
	t.Helper()
	for _, nc := range res.NewNodeClaims {
		apps := map[string]int{}
		for _, p := range nc.Pods {
			if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
				if apps[p.Labels["app"]]++; apps[p.Labels["app"]] > 1 {
					t.Errorf("%s: claim %s holds two %s pods that keep apart by hostname", d, nc.Hostname, p.Labels["app"])
				}
			}
		}
		pods := corev1.ResourceList{}
		for _, p := range nc.Pods {
			for k, q := range scheduling.PodRequests(p) {
				sum := pods[k]
				sum.Add(q)
				pods[k] = sum
			}
		}
		for i, it := range nc.InstanceTypes {
			asks := pods // the DaemonSets' overhead is the cheapest type's in Requests
			if i == 0 {
				asks = nc.Requests
			}
			if err := scheduling.Fits(asks, it.Allocatable()); err != nil {
				t.Errorf("%s: claim %s on %s: %v", d, nc.Hostname, it.Name, err)
			}
			labels := nc.Requirements.Labels()
			for k, r := range it.Requirements {
				if r.Len() == 1 {
					labels[k] = r.Values()[0]
				}
			}
			for _, p := range nc.Pods {
				for k, v := range p.Spec.NodeSelector {
					if got, ok := labels[k]; !ok && !nc.Requirements.Get(k).Has(v) || ok && got != v {
						t.Errorf("%s: pod %s selects %s=%s, claim %s as %s has %q", d, p.Name, k, v, nc.Hostname, it.Name, got)
					}
				}
			}
		}
	}
}

// generateBatch draws NodePools (weights, taints, limits, spot and
// on-demand, a GPU pool), instance types of four families and two
// architectures with spot prices per zone, DaemonSets restricted by label,
// a node already there, and Deployments with zone spread, anti-affinity,
// preferences, arch selectors, GPUs and required affinity to Deployments
// later in the batch.
func generateBatch(r *rand.Rand) *batch {
	its := generateTypes(r)
	snap := &Snapshot{InstanceTypes: map[string][]*cloudprovider.InstanceType{}}
	general := pool("general", weight(int32(r.Intn(3))),
		requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, pick(r, []string{v1.CapacityTypeOnDemand}, []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot})...),
		requirement("family", corev1.NodeSelectorOpNotIn, "p"))
	if r.Intn(3) == 0 {
		general.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse(strconv.Itoa(16 + 8*r.Intn(8)))}
	}
	pools := []*v1.NodePool{general}
	if r.Intn(2) == 0 {
		spot := pool("spot", weight(int32(r.Intn(3))), requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot),
			requirement("family", corev1.NodeSelectorOpNotIn, "p"))
		if r.Intn(2) == 0 {
			spot.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}
		pools = append(pools, spot)
	}
	if r.Intn(2) == 0 {
		pools = append(pools, pool("gpu", weight(10), requirement("family", corev1.NodeSelectorOpIn, "p"),
			taint("nvidia.com/gpu", "true", corev1.TaintEffectNoSchedule)))
	}
	snap.NodePools = pools
	for _, p := range pools {
		snap.InstanceTypes[p.Name] = its
	}
	snap.DaemonSets = []*corev1.Pod{pod("100m", "128Mi")}
	if r.Intn(2) == 0 {
		snap.DaemonSets = append(snap.DaemonSets, pod("250m", "256Mi", nodeSelector(v1.LabelArch, "arm64")))
	}
	snap.DaemonSets = append(snap.DaemonSets, pod("200m", "256Mi", nodeSelector("gpu-manufacturer", "nvidia"), tolerate("nvidia.com/gpu")))
	if r.Intn(3) == 0 {
		free := readyNode("existing-1", zones[r.Intn(3)], int64(4<<r.Intn(3)))
		free.NodePool = "general"
		free.Capacity = free.Allocatable
		free.Labels[v1.LabelArch] = "amd64"
		free.Labels[v1.LabelCapacityType] = v1.CapacityTypeOnDemand
		snap.Nodes = append(snap.Nodes, free)
	}
	snap.Pods = generateDeployments(r)
	if r.Intn(3) == 0 {
		snap.Pods = append(snap.Pods, bufferChunks(r)...)
	}
	if r.Intn(3) == 0 {
		addReservations(r, general, its) // drawn last: the batches before them stay as they were
	}
	if r.Intn(3) == 0 {
		addDeviceClaims(r, snap, its) // after reservations, for the same reason
	}
	return &batch{snap: snap}
}

// addDeviceClaims models DRA in the batch: each GPU type (family p) gets a
// device per 4 cores, and 1 to 6 pods claim 1 or 2 GPUs each through a
// template (tolerating the GPU pool's taint).
func addDeviceClaims(r *rand.Rand, snap *Snapshot, its []*cloudprovider.InstanceType) {
	for _, t := range its {
		if fam, _ := t.Requirements.Get("family").Any(); fam == "p" {
			cpu := t.Capacity[corev1.ResourceCPU]
			devices(int(cpu.Value()/4), "p100")(t)
		}
	}
	snap.Policy.ModelDRA = true
	snap.DRA = &DRAObjects{Classes: []*resourceapi.DeviceClass{gpuClass},
		Templates: []*resourceapi.ResourceClaimTemplate{gpuTemplate("gpu-1", 1, "", false), gpuTemplate("gpu-2", 2, "", false)}}
	for i, n := 0, 1+r.Intn(6); i < n; i++ {
		p := pod(fmt.Sprintf("%dm", 500+500*r.Intn(4)), "2Gi", withClaim(fmt.Sprintf("gpu-%d", 1+r.Intn(2))), tolerate("nvidia.com/gpu"))
		p.Labels["app"] = "trainer"
		snap.Pods = append(snap.Pods, p)
	}
}

// requireDevicesKept: no NodeClaim holds pods claiming more GPUs than any
// of its instance types has.
func requireDevicesKept(t *testing.T, d Decisions, snap *Snapshot, res *Results) {
	t.Helper()
	if !snap.Policy.ModelDRA {
		return
	}
	for _, nc := range res.NewNodeClaims {
		want := 0
		for _, p := range nc.Pods {
			for _, rc := range p.Spec.ResourceClaims {
				if rc.ResourceClaimTemplateName != nil {
					want += int(templateOf(snap.DRA, "default", *rc.ResourceClaimTemplateName).Spec.Spec.Devices.Requests[0].Exactly.Count)
				}
			}
		}
		if want == 0 {
			continue
		}
		for _, it := range nc.InstanceTypes {
			if have := len(it.Devices); have == 0 || len(it.Devices[0].Devices) < want {
				t.Errorf("%s: a NodeClaim of pods claiming %d GPUs may launch %s", d, want, it.Name)
			}
		}
	}
}

// addReservations gives one to three of the general pool's types a
// capacity reservation of 1 to 4 instances in one zone, and lets the pool
// launch into them.
func addReservations(r *rand.Rand, general *v1.NodePool, its []*cloudprovider.InstanceType) {
	var candidates []*cloudprovider.InstanceType
	for _, t := range its {
		if fam, _ := t.Requirements.Get("family").Any(); fam != "p" {
			candidates = append(candidates, t)
		}
	}
	for i, n := 0, 1+r.Intn(3); i < n && len(candidates) > 0; i++ {
		t := candidates[r.Intn(len(candidates))]
		reserved(fmt.Sprintf("cr-%d", i), zones[r.Intn(len(zones))], 1+r.Intn(4))(t)
	}
	reqs := general.Spec.Template.Spec.Requirements
	for i := range reqs {
		if reqs[i].Key == v1.LabelCapacityType {
			reqs[i].Values = append(reqs[i].Values, v1.CapacityTypeReserved)
		}
	}
}

// requireReservationsKept: no reservation holds more of the plan's
// claims than it has instances free.
func requireReservationsKept(t *testing.T, d Decisions, snap *Snapshot, res *Results) {
	t.Helper()
	free := map[string]int{}
	for _, its := range snap.InstanceTypes {
		for _, it := range its {
			for _, o := range it.Offerings {
				if o.Reservation != nil && o.Available {
					free[o.Reservation.ID] = o.Reservation.Capacity
				}
			}
		}
	}
	held := map[string]int{}
	for _, nc := range res.NewNodeClaims {
		if ct, ids := heldReservations(nc); ct != "" {
			for _, id := range ids {
				held[id]++
			}
		}
	}
	for id, n := range held {
		if n > free[id] {
			t.Errorf("%s: %d claims hold reservation %s, which has %d free", d, n, id, free[id])
		}
	}
}

// bufferChunks are a CapacityBuffer's virtual pods as pkg/buffer makes
// them (marked, at the lowest priority, never bound): 1 to 6 chunks of
// 500m to 2 cores. They are pending pods to the engine, which must place
// them as it places any.
func bufferChunks(r *rand.Rand) []*corev1.Pod {
	cpu := pick(r, "500m", "1", "2")
	n := 1 + r.Intn(6)
	lowest := int32(math.MinInt32)
	out := make([]*corev1.Pod, 0, n)
	for i := 1; i <= n; i++ {
		p := pod(cpu, "1Gi")
		p.Name = fmt.Sprintf("capacity-buffer-warm-%d", i)
		p.Annotations = map[string]string{"karpenter.sh/capacity-buffer-fake-pod": "true", "karpenter.sh/capacity-buffer-name": "warm"}
		p.Labels = map[string]string{"app": "buffer"}
		p.Spec.Priority = &lowest
		out = append(out, p)
	}
	return out
}

func pick[T any](r *rand.Rand, options ...T) T { return options[r.Intn(len(options))] }

// generateTypes: families m (4 GiB per core), c (2), r (8), each amd64,
// g (arm64, 4 GiB) and p (amd64 with a GPU per 4 cores), in a random
// subset of sizes, priced per core by family, spot at 25–65 % of it per
// zone, a tenth of the offerings unavailable.
func generateTypes(r *rand.Rand) []*cloudprovider.InstanceType {
	type family struct {
		name, arch string
		gib        int64
		price      float64
	}
	families := []family{{"m", "amd64", 4, 0.048}, {"c", "amd64", 2, 0.0425}, {"r", "amd64", 8, 0.063}, {"g", "arm64", 4, 0.0385}, {"p", "amd64", 8, 0.25}}
	var out []*cloudprovider.InstanceType
	for _, f := range families {
		for _, cpu := range []int64{1, 2, 4, 8, 16, 32, 48} {
			if r.Intn(4) == 0 || f.name == "p" && cpu < 4 {
				continue
			}
			name := fmt.Sprintf("%s.%dx", f.name, cpu)
			price := f.price * float64(cpu) * (0.95 + 0.1*r.Float64())
			var offerings cloudprovider.Offerings
			for _, z := range zones {
				offerings = append(offerings,
					&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: r.Intn(10) > 0},
					&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price * (0.25 + 0.4*r.Float64()), Available: r.Intn(10) > 0})
			}
			reqs := scheduling.NewRequirements(
				scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
				scheduling.NewRequirement("family", corev1.NodeSelectorOpIn, f.name),
				scheduling.NewRequirement(v1.LabelArch, corev1.NodeSelectorOpIn, f.arch),
				scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, zones...),
				scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand))
			capacity := corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(f.gib*cpu<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
			}
			if f.name == "p" {
				reqs.Add(scheduling.NewRequirement("gpu-manufacturer", corev1.NodeSelectorOpIn, "nvidia"))
				capacity["nvidia.com/gpu"] = *resource.NewQuantity(cpu/4, resource.DecimalSI)
			}
			out = append(out, &cloudprovider.InstanceType{Name: name, Requirements: reqs, Offerings: offerings, Capacity: capacity,
				Overhead: cloudprovider.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}})
		}
	}
	return out
}

// generateDeployments draws 3–8 Deployments of 1–12 replicas, created one
// after the other, with constraints drawn independently.
func generateDeployments(r *rand.Rand) []*corev1.Pod {
	created := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	cpus := []string{"100m", "250m", "500m", "1", "1500m", "2", "3", "4", "7"}
	mems := []string{"128Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi", "12Gi"}
	n := 3 + r.Intn(6)
	type deployment struct {
		app      string
		cpu, mem string
		opts     []podOpt
		replicas int
	}
	deps := make([]*deployment, n)
	for i := range deps {
		app := fmt.Sprintf("app-%d", i)
		d := &deployment{app: app, cpu: pick(r, cpus...), mem: pick(r, mems...), replicas: 1 + r.Intn(12), opts: []podOpt{label("app", app)}}
		if r.Intn(4) == 0 {
			d.opts = append(d.opts, spread(v1.LabelZone, 1))
		}
		if r.Intn(5) == 0 {
			d.opts = append(d.opts, antiAffinityHostname(app))
		} else if r.Intn(6) == 0 {
			d.opts = append(d.opts, spread(v1.LabelHostname, 1))
		}
		if r.Intn(3) == 0 {
			d.opts = append(d.opts, tolerate("spot"))
		}
		switch r.Intn(6) {
		case 0:
			d.opts = append(d.opts, nodeSelector(v1.LabelArch, "arm64"))
		case 1:
			d.opts = append(d.opts, nodeSelector(v1.LabelArch, "amd64"))
		}
		if r.Intn(7) == 0 {
			d.opts = append(d.opts, gpu("1"), tolerate("nvidia.com/gpu"))
		}
		if r.Intn(4) == 0 {
			pref := pick(r, [2]string{v1.LabelZone, "zone-a"}, [2]string{v1.LabelCapacityType, v1.CapacityTypeSpot}, [2]string{"family", "c"})
			d.opts = append(d.opts, preferNode(int32(1+r.Intn(100)), pref[0], pref[1]))
		}
		deps[i] = d
	}
	// Required affinity to a Deployment later in the batch.
	if r.Intn(2) == 0 && n > 1 {
		i := r.Intn(n - 1)
		target := deps[i+1+r.Intn(n-i-1)]
		key := pick(r, v1.LabelHostname, v1.LabelZone)
		deps[i].opts = append(deps[i].opts, requireAffinity(target.app, key))
	}
	var pods []*corev1.Pod
	for i, d := range deps {
		for k := 0; k < d.replicas; k++ {
			p := pod(d.cpu, d.mem, d.opts...)
			p.Name = fmt.Sprintf("%s-%d", d.app, k)
			p.UID = types.UID(fmt.Sprintf("uid-%02d-%02d", i, k))
			p.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(i) * time.Second))
			pods = append(pods, p)
		}
	}
	r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	return pods
}

func preferNode(weight int32, key, value string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}}}
	}
}

func requireAffinity(app, key string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}}}
	}
}

// templateOf is the ResourceClaimTemplate namespace/name in o, nil when
// there is none.
func templateOf(o *DRAObjects, namespace, name string) *resourceapi.ResourceClaimTemplate {
	if o == nil {
		return nil
	}
	for _, t := range o.Templates {
		if t.Namespace == namespace && t.Name == name {
			return t
		}
	}
	return nil
}
