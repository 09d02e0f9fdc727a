package crds_test

import (
	"fmt"
	"strings"
	"testing"
)

// What upstream accepts and rejects, rule by rule: for every enum, pattern,
// bound and CEL rule of upstream's CRDs (and the kubelet rules its controller
// applies) a value it accepts and one it rejects, checked against Joiner's
// CRDs. Cases marked "(difference)" pin a documented difference instead.

const baseNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
`

const baseNodeClaim = `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: general-x7k2p
spec:
  requirements:
    - key: node.kubernetes.io/instance-type
      operator: In
      values: ["m6i.xlarge"]
  nodeClassRef:
    group: karpenter.k8s.aws
    kind: EC2NodeClass
    name: default
`

const baseEC2NodeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
`

const baseNodeOverlay = `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: savings-plan
spec:
  weight: 10
  requirements:
    - key: karpenter.k8s.aws/instance-family
      operator: In
      values: ["m6i", "m7i"]
  priceAdjustment: "-20%"
`

var bases = map[string]string{"NodePool": baseNodePool, "NodeClaim": baseNodeClaim, "EC2NodeClass": baseEC2NodeClass, "NodeOverlay": baseNodeOverlay}

// acceptCase changes a base object and says whether the result is valid.
type acceptCase struct {
	kind string
	name string
	set  []string // "path=YAML value", applied in order
	del  []string // paths removed first
	// field and msg are where and what the problem is (substrings of
	// "path: message"); both empty: the object must be valid.
	field, msg string
}

const (
	np  = "NodePool"
	ncl = "NodeClaim"
	ec2 = "EC2NodeClass"
	ovl = "NodeOverlay"
)

// Paths used often.
const (
	npReqs   = "spec.template.spec.requirements"
	npReq0   = "spec.template.spec.requirements[0]"
	npLabels = "spec.template.metadata.labels"
	npTaints = "spec.template.spec.taints"
)

func ok(kind, name string, set ...string) acceptCase {
	return acceptCase{kind: kind, name: name, set: set}
}

func bad(kind, name, field, msg string, set ...string) acceptCase {
	return acceptCase{kind: kind, name: name, set: set, field: field, msg: msg}
}

func repeat(item string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

var acceptCases = []acceptCase{
	// --- NodePool: spec and disruption
	ok(np, "the base"),
	{kind: np, name: "disruption omitted (defaults)", del: []string{"spec.disruption"}},
	{kind: np, name: "template missing", del: []string{"spec.template"}, field: "spec.template", msg: "Required value"},
	{kind: np, name: "requirements missing", del: []string{"spec.template.spec.requirements"}, field: npReqs, msg: "Required value"},
	{kind: np, name: "nodeClassRef missing", del: []string{"spec.template.spec.nodeClassRef"}, field: "spec.template.spec.nodeClassRef", msg: "Required value"},
	ok(np, "consolidateAfter 30s", "spec.disruption.consolidateAfter=30s"),
	ok(np, "consolidateAfter 1h30m", "spec.disruption.consolidateAfter=1h30m"),
	ok(np, "consolidateAfter Never", "spec.disruption.consolidateAfter=Never"),
	bad(np, "consolidateAfter in days", "spec.disruption.consolidateAfter", "should match", "spec.disruption.consolidateAfter=1d"),
	bad(np, "consolidateAfter with spaces", "spec.disruption.consolidateAfter", "should match", "spec.disruption.consolidateAfter=1 minute"),
	ok(np, "consolidationPolicy WhenEmpty", "spec.disruption.consolidationPolicy=WhenEmpty"),
	ok(np, "consolidationPolicy WhenEmptyOrUnderutilized", "spec.disruption.consolidationPolicy=WhenEmptyOrUnderutilized"),
	ok(np, "consolidationPolicy Balanced", "spec.disruption.consolidationPolicy=Balanced"),
	bad(np, "consolidationPolicy WhenUnderutilized (v1beta1)", "spec.disruption.consolidationPolicy", "Unsupported value", "spec.disruption.consolidationPolicy=WhenUnderutilized"),
	ok(np, "budget nodes 10%", `spec.disruption.budgets=[{nodes: "10%"}]`),
	ok(np, "budget nodes 100%", `spec.disruption.budgets=[{nodes: "100%"}]`),
	ok(np, "budget nodes 0", `spec.disruption.budgets=[{nodes: "0"}]`),
	bad(np, "budget nodes 101%", "spec.disruption.budgets[0].nodes", "should match", `spec.disruption.budgets=[{nodes: "101%"}]`),
	bad(np, "budget nodes -1", "spec.disruption.budgets[0].nodes", "should match", `spec.disruption.budgets=[{nodes: "-1"}]`),
	ok(np, "budget schedule and duration", `spec.disruption.budgets=[{nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h}]`),
	ok(np, "budget macro schedule", `spec.disruption.budgets=[{nodes: "0", schedule: "@daily", duration: 10m}]`),
	ok(np, "budget duration 1h30m", `spec.disruption.budgets=[{nodes: "0", schedule: "@daily", duration: 1h30m}]`),
	bad(np, "budget schedule without duration", "spec.disruption.budgets", "'schedule' must be set with 'duration'", `spec.disruption.budgets=[{nodes: "0", schedule: "@daily"}]`),
	bad(np, "budget duration without schedule", "spec.disruption.budgets", "'schedule' must be set with 'duration'", `spec.disruption.budgets=[{nodes: "0", duration: 1h}]`),
	bad(np, "budget four-field cron", "spec.disruption.budgets[0].schedule", "should match", `spec.disruption.budgets=[{nodes: "0", schedule: "0 9 * *", duration: 1h}]`),
	bad(np, "budget duration in seconds", "spec.disruption.budgets[0].duration", "should match", `spec.disruption.budgets=[{nodes: "0", schedule: "@daily", duration: 30s}]`),
	ok(np, "budget reasons", `spec.disruption.budgets=[{nodes: "1", reasons: [Underutilized, Empty, Drifted]}]`),
	bad(np, "budget reason Expired", "spec.disruption.budgets[0].reasons[0]", "Unsupported value", `spec.disruption.budgets=[{nodes: "1", reasons: [Expired]}]`),
	bad(np, "budget reasons repeated (a set)", "spec.disruption.budgets[0].reasons[1]", "Duplicate value", `spec.disruption.budgets=[{nodes: "1", reasons: [Drifted, Drifted]}]`),
	ok(np, "50 budgets", "spec.disruption.budgets="+repeat(`{nodes: "1"}`, 50)),
	bad(np, "51 budgets", "spec.disruption.budgets", "must have at most 50 items", "spec.disruption.budgets="+repeat(`{nodes: "1"}`, 51)),
	ok(np, "limits", `spec.limits={cpu: "1000", memory: 1000Gi, nvidia.com/gpu: 8}`),
	bad(np, "limits with a unit written out", "spec.limits.memory", "should match", `spec.limits={memory: 10 GB}`),
	ok(np, "weight 1", "spec.weight=1"),
	ok(np, "weight 100", "spec.weight=100"),
	bad(np, "weight 0", "spec.weight", "greater than or equal to 1", "spec.weight=0"),
	bad(np, "weight 101", "spec.weight", "less than or equal to 100", "spec.weight=101"),
	ok(np, "static pool", "spec.replicas=3", `spec.limits={nodes: "5"}`),
	ok(np, "static pool of none", "spec.replicas=0"),
	bad(np, "replicas negative", "spec.replicas", "greater than or equal to 0", "spec.replicas=-1"),
	bad(np, "static pool with weight", "spec", "'weight' is not supported on static NodePools", "spec.replicas=3", "spec.weight=10"),
	bad(np, "static pool with a cpu limit", "spec", "only 'limits.nodes' is supported on static NodePools", "spec.replicas=3", `spec.limits={cpu: "10"}`),
	bad(np, "unknown field", "spec.disruption.consolidateAftr", "unknown field", "spec.disruption.consolidateAftr=1m"),

	// --- NodePool: template
	ok(np, "expireAfter 720h", "spec.template.spec.expireAfter=720h"),
	ok(np, "expireAfter Never", "spec.template.spec.expireAfter=Never"),
	bad(np, "expireAfter in days", "spec.template.spec.expireAfter", "should match", "spec.template.spec.expireAfter=30d"),
	ok(np, "terminationGracePeriod 48h", "spec.template.spec.terminationGracePeriod=48h"),
	bad(np, "terminationGracePeriod Never", "spec.template.spec.terminationGracePeriod", "should match", "spec.template.spec.terminationGracePeriod=Never"),
	bad(np, "nodeClassRef group empty", "spec.template.spec.nodeClassRef.group", "group may not be empty", `spec.template.spec.nodeClassRef.group=""`),
	bad(np, "nodeClassRef group with a version", "spec.template.spec.nodeClassRef.group", "should match", "spec.template.spec.nodeClassRef.group=karpenter.k8s.aws/v1"),
	bad(np, "nodeClassRef kind empty", "spec.template.spec.nodeClassRef.kind", "kind may not be empty", `spec.template.spec.nodeClassRef.kind=""`),
	bad(np, "nodeClassRef name empty", "spec.template.spec.nodeClassRef.name", "name may not be empty", `spec.template.spec.nodeClassRef.name=""`),
	ok(np, "labels of one's own", npLabels+"={team: payments, tier: ''}"),
	ok(np, "label karpenter.sh/capacity-type", npLabels+"={karpenter.sh/capacity-type: spot}"),
	bad(np, "label karpenter.sh domain", npLabels, `label domain "karpenter.sh" is restricted`, npLabels+"={karpenter.sh/team: a}"),
	bad(np, "label karpenter.sh/nodepool", npLabels, `label "karpenter.sh/nodepool" is restricted`, npLabels+"={karpenter.sh/nodepool: a}"),
	bad(np, "label kubernetes.io/hostname", npLabels, `label "kubernetes.io/hostname" is restricted`, npLabels+"={kubernetes.io/hostname: a}"),
	ok(np, "label karpenter.k8s.aws/instance-family", npLabels+"={karpenter.k8s.aws/instance-family: m6i}"),
	bad(np, "label karpenter.k8s.aws domain", npLabels, `label domain "karpenter.k8s.aws" is restricted`, npLabels+"={karpenter.k8s.aws/team: a}"),
	ok(np, "label node-restriction.kubernetes.io", npLabels+"={node-restriction.kubernetes.io/team: a}"),
	bad(np, "label value with a space", npLabels+".team", "should match", npLabels+"={team: a b}"),
	ok(np, "label value of 63 characters", npLabels+"={team: "+strings.Repeat("a", 63)+"}"),
	bad(np, "label value of 64 characters", npLabels+".team", "may not be more than 63", npLabels+"={team: "+strings.Repeat("a", 64)+"}"),
	bad(np, "101 labels", npLabels, "must have at most 100 items", npLabels+"={"+manyLabels(101)+"}"),
	ok(np, "annotations", "spec.template.metadata.annotations={example.com/owner: team a}"),
	ok(np, "taints", npTaints+"=[{key: nvidia.com/gpu, value: 'true', effect: NoSchedule}, {key: dedicated, effect: NoExecute}, {key: b, effect: PreferNoSchedule}]"),
	bad(np, "taint effect misspelt", npTaints+"[0].effect", "Unsupported value", npTaints+"=[{key: a, effect: NoScheduled}]"),
	bad(np, "taint without effect", npTaints+"[0].effect", "Required value", npTaints+"=[{key: a}]"),
	bad(np, "taint key empty", npTaints+"[0].key", "at least 1 chars long", npTaints+"=[{key: '', effect: NoSchedule}]"),
	bad(np, "taint key upper-case prefix", npTaints+"[0].key", "should match", npTaints+"=[{key: Example.com/a, effect: NoSchedule}]"),
	bad(np, "taint value with a space", npTaints+"[0].value", "should match", npTaints+"=[{key: a, value: a b, effect: NoSchedule}]"),
	bad(np, "taint value empty", npTaints+"[0].value", "should match", npTaints+"=[{key: a, value: '', effect: NoSchedule}]"),
	ok(np, "startup taint", "spec.template.spec.startupTaints=[{key: node.cilium.io/agent-not-ready, value: 'true', effect: NoExecute}]"),
	bad(np, "startup taint effect misspelt", "spec.template.spec.startupTaints[0].effect", "Unsupported value", "spec.template.spec.startupTaints=[{key: a, effect: Never}]"),

	// --- NodePool: requirements
	ok(np, "requirement In", npReq0+"={key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}"),
	ok(np, "requirement NotIn, Exists, DoesNotExist", npReqs+"=[{key: a, operator: NotIn, values: [x]}, {key: b, operator: Exists}, {key: c, operator: DoesNotExist}]"),
	bad(np, "requirement In without values", npReqs, "requirements with operator 'In' must have a value defined", npReq0+"={key: a, operator: In, values: []}"),
	bad(np, "requirement operator Within", npReq0+".operator", "Unsupported value", npReq0+"={key: a, operator: Within, values: [x]}"),
	bad(np, "requirement without operator", npReq0+".operator", "Required value", npReq0+"={key: a, values: [x]}"),
	ok(np, "requirement Gt 3", npReq0+"={key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['3']}"),
	ok(np, "requirement Lt, Gte, Lte", npReqs+"=[{key: a, operator: Lt, values: ['3']}, {key: b, operator: Gte, values: ['0']}, {key: c, operator: Lte, values: ['64']}]"),
	bad(np, "requirement Gt two values", npReqs, "must have a single positive integer value", npReq0+"={key: a, operator: Gt, values: ['3', '4']}"),
	bad(np, "requirement Gte not a number", npReqs, "must have a single positive integer value", npReq0+"={key: a, operator: Gte, values: [many]}"),
	bad(np, "requirement Lt without values", npReqs, "must have a single positive integer value", npReq0+"={key: a, operator: Lt}"),
	ok(np, "minValues 2 of 2", npReq0+"={key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i, m7i], minValues: 2}"),
	bad(np, "minValues 3 of 2", npReqs, "'minValues' must have at least that many values", npReq0+"={key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i, m7i], minValues: 3}"),
	bad(np, "minValues 0", npReq0+".minValues", "greater than or equal to 1", npReq0+"={key: a, operator: Exists, minValues: 0}"),
	bad(np, "minValues 51", npReq0+".minValues", "less than or equal to 50", npReq0+"={key: a, operator: Exists, minValues: 51}"),
	bad(np, "101 requirements", npReqs, "must have at most 100 items", npReqs+"="+repeat("{key: a, operator: Exists}", 101)),
	bad(np, "requirement value with a space", npReq0+".values[0]", "should match", npReq0+"={key: a, operator: In, values: [a b]}"),
	bad(np, "requirement value of 64 characters", npReq0+".values[0]", "may not be more than 63", npReq0+"={key: a, operator: In, values: ["+strings.Repeat("a", 64)+"]}"),
	ok(np, "101 values", npReq0+"={key: a, operator: In, values: "+repeat("a", 101)+"}"),
	bad(np, "requirement key upper-case prefix", npReq0+".key", "should match", npReq0+"={key: Example.com/a, operator: Exists}"),
	bad(np, "requirement key of 317 characters", npReq0+".key", "may not be more than 316", npReq0+"={key: "+strings.Repeat("a", 250)+".com/"+strings.Repeat("b", 62)+", operator: Exists}"),
	ok(np, "requirement key of one's own", npReq0+"={key: example.com/team, operator: In, values: [a]}"),
	bad(np, "requirement key karpenter.sh domain", npReq0+".key", `label domain "karpenter.sh" is restricted`, npReq0+"={key: karpenter.sh/team, operator: Exists}"),
	bad(np, "requirement key karpenter.sh/nodepool", npReqs, `label "karpenter.sh/nodepool" is restricted`, npReq0+"={key: karpenter.sh/nodepool, operator: In, values: [a]}"),
	bad(np, "requirement key kubernetes.io/hostname", npReq0+".key", `label "kubernetes.io/hostname" is restricted`, npReq0+"={key: kubernetes.io/hostname, operator: Exists}"),
	bad(np, "requirement key misspelt in karpenter.k8s.aws", npReq0+".key", `label domain "karpenter.k8s.aws" is restricted`, npReq0+"={key: karpenter.k8s.aws/instance-familly, operator: Exists}"),
	ok(np, "requirement key topology.k8s.aws/zone-id", npReq0+"={key: topology.k8s.aws/zone-id, operator: In, values: [use1-az1]}"),
	ok(np, "requirement key node.kubernetes.io/windows-build", npReq0+"={key: node.kubernetes.io/windows-build, operator: In, values: [10.0.20348]}"),
	ok(np, "requirement key beta.kubernetes.io/arch", npReq0+"={key: beta.kubernetes.io/arch, operator: In, values: [arm64]}"),
	// (difference) kubernetes-sigs/karpenter#2586 accepts these; see extraRules.
	bad(np, "(difference) requirement key kubernetes.io domain", npReq0+".key", `label domain "kubernetes.io" is restricted`, npReq0+"={key: kubernetes.io/team, operator: Exists}"),
	bad(np, "(difference) requirement key k8s.io domain", npReq0+".key", `label domain "k8s.io" is restricted`, npReq0+"={key: team.k8s.io/a, operator: Exists}"),

	// --- NodeClaim
	ok(ncl, "the base"),
	ok(ncl, "resources", "spec.resources={requests: {cpu: '2', memory: 4Gi, pods: '10'}}"),
	ok(ncl, "requirement karpenter.sh/nodepool (allowed on NodeClaims)", "spec.requirements[1]={key: karpenter.sh/nodepool, operator: In, values: [general]}"),
	bad(ncl, "requirement karpenter.sh domain", "spec.requirements[0].key", `label domain "karpenter.sh" is restricted`, "spec.requirements[0]={key: karpenter.sh/team, operator: Exists}"),
	bad(ncl, "requirement karpenter.k8s.aws misspelt", "spec.requirements[0].key", `label domain "karpenter.k8s.aws" is restricted`, "spec.requirements[0]={key: karpenter.k8s.aws/instance-sise, operator: Exists}"),
	bad(ncl, "requirement In without values", "spec.requirements", "requirements with operator 'In' must have a value defined", "spec.requirements[0]={key: a, operator: In}"),
	bad(ncl, "requirement Gt negative", "spec.requirements", "must have a single positive integer value", "spec.requirements[0]={key: a, operator: Gt, values: ['-1']}"),
	bad(ncl, "minValues 2 of 1", "spec.requirements", "'minValues' must have at least that many values", "spec.requirements[0]={key: a, operator: In, values: [x], minValues: 2}"),
	bad(ncl, "taint effect misspelt", "spec.taints[0].effect", "Unsupported value", "spec.taints=[{key: a, effect: noschedule}]"),
	bad(ncl, "startup taint key empty", "spec.startupTaints[0].key", "at least 1 chars long", "spec.startupTaints=[{key: '', effect: NoSchedule}]"),
	bad(ncl, "expireAfter in days", "spec.expireAfter", "should match", "spec.expireAfter=30d"),
	{kind: ncl, name: "nodeClassRef missing", del: []string{"spec.nodeClassRef"}, field: "spec.nodeClassRef", msg: "Required value"},

	// --- EC2NodeClass: role, AMIs
	ok(ec2, "the base"),
	{kind: ec2, name: "instanceProfile instead of role", del: []string{"spec.role"}, set: []string{"spec.instanceProfile=KarpenterNodeInstanceProfile"}},
	bad(ec2, "role and instanceProfile", "spec", "must specify exactly one of ['role', 'instanceProfile']", "spec.instanceProfile=p"),
	{kind: ec2, name: "neither role nor instanceProfile", del: []string{"spec.role"}, field: "spec", msg: "must specify exactly one of ['role', 'instanceProfile']"},
	bad(ec2, "role empty", "spec.role", "role cannot be empty", `spec.role=""`),
	{kind: ec2, name: "instanceProfile empty", del: []string{"spec.role"}, set: []string{`spec.instanceProfile=""`}, field: "spec.instanceProfile", msg: "instanceProfile cannot be empty"},
	{kind: ec2, name: "amiSelectorTerms missing", del: []string{"spec.amiSelectorTerms"}, field: "spec.amiSelectorTerms", msg: "Required value"},
	bad(ec2, "amiSelectorTerms empty", "spec.amiSelectorTerms", "should have at least 1 items", "spec.amiSelectorTerms=[]"),
	ok(ec2, "alias al2@latest", "spec.amiSelectorTerms=[{alias: al2@latest}]"),
	ok(ec2, "alias al2023 pinned", "spec.amiSelectorTerms=[{alias: al2023@v20240807}]"),
	ok(ec2, "alias bottlerocket pinned", "spec.amiSelectorTerms=[{alias: bottlerocket@v1.20.3}]"),
	ok(ec2, "alias windows2019@latest", "spec.amiSelectorTerms=[{alias: windows2019@latest}]"),
	ok(ec2, "alias windows2022@latest", "spec.amiSelectorTerms=[{alias: windows2022@latest}]"),
	ok(ec2, "alias windows2025@latest", "spec.amiSelectorTerms=[{alias: windows2025@latest}]"),
	bad(ec2, "alias windows2022 pinned", "spec.amiSelectorTerms[0].alias", "windows families may only specify version 'latest'", "spec.amiSelectorTerms=[{alias: windows2022@v20240101}]"),
	bad(ec2, "alias ubuntu", "spec.amiSelectorTerms[0].alias", "family is not supported", "spec.amiSelectorTerms=[{alias: ubuntu@latest}]"),
	bad(ec2, "alias without version", "spec.amiSelectorTerms[0].alias", "'alias' is improperly formatted", "spec.amiSelectorTerms=[{alias: al2023}]"),
	bad(ec2, "alias of 31 characters", "spec.amiSelectorTerms[0].alias", "may not be more than 30", "spec.amiSelectorTerms=[{alias: al2023@v"+strings.Repeat("1", 23)+"}]"),
	bad(ec2, "alias with another term", "spec.amiSelectorTerms", "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms", "spec.amiSelectorTerms=[{alias: al2023@latest}, {id: ami-0123}]"),
	bad(ec2, "alias with tags in one term", "spec.amiSelectorTerms", "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms", "spec.amiSelectorTerms=[{alias: al2023@latest, tags: {a: b}}]"),
	ok(ec2, "amiFamily AL2023 with an al2023 alias", "spec.amiFamily=AL2023"),
	ok(ec2, "amiFamily Custom with an alias", "spec.amiFamily=Custom"),
	bad(ec2, "amiFamily AL2 with an al2023 alias", "spec", "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias", "spec.amiFamily=AL2"),
	bad(ec2, "amiFamily AL2023 with an al2 alias", "spec", "if set, amiFamily must be 'AL2' or 'Custom' when using an AL2 alias", "spec.amiSelectorTerms=[{alias: al2@latest}]", "spec.amiFamily=AL2023"),
	bad(ec2, "amiFamily AL2023 with a bottlerocket alias", "spec", "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using a Bottlerocket alias", "spec.amiSelectorTerms=[{alias: bottlerocket@latest}]", "spec.amiFamily=AL2023"),
	bad(ec2, "amiFamily Windows2022 with a windows2019 alias", "spec", "if set, amiFamily must be 'Windows2019' or 'Custom' when using a Windows2019 alias", "spec.amiSelectorTerms=[{alias: windows2019@latest}]", "spec.amiFamily=Windows2022"),
	bad(ec2, "amiFamily Windows2025 with a windows2022 alias", "spec", "if set, amiFamily must be 'Windows2022' or 'Custom' when using a Windows2022 alias", "spec.amiSelectorTerms=[{alias: windows2022@latest}]", "spec.amiFamily=Windows2025"),
	bad(ec2, "amiFamily AL2 with a windows2025 alias", "spec", "if set, amiFamily must be 'Windows2025' or 'Custom' when using a Windows2025 alias", "spec.amiSelectorTerms=[{alias: windows2025@latest}]", "spec.amiFamily=AL2"),
	bad(ec2, "amiFamily unknown", "spec.amiFamily", "Unsupported value", "spec.amiFamily=Ubuntu"),
	bad(ec2, "no alias and no amiFamily", "spec", "must specify amiFamily if amiSelectorTerms does not contain an alias", "spec.amiSelectorTerms=[{id: ami-0123456789abcdef0}]"),
	ok(ec2, "id with amiFamily", "spec.amiSelectorTerms=[{id: ami-0123456789abcdef0}]", "spec.amiFamily=AL2023"),
	ok(ec2, "tags and name and owner", "spec.amiSelectorTerms=[{tags: {team: a}, name: my-ami-*, owner: self}, {ssmParameter: /my/ami}]", "spec.amiFamily=Custom"),
	bad(ec2, "id with tags", "spec.amiSelectorTerms", "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms", "spec.amiSelectorTerms=[{id: ami-0123, tags: {a: b}}]", "spec.amiFamily=AL2023"),
	bad(ec2, "id with owner", "spec.amiSelectorTerms", "'id' is mutually exclusive", "spec.amiSelectorTerms=[{id: ami-0123, owner: self}]", "spec.amiFamily=AL2023"),
	bad(ec2, "id malformed", "spec.amiSelectorTerms[0].id", "should match", "spec.amiSelectorTerms=[{id: image-1}]", "spec.amiFamily=AL2023"),
	bad(ec2, "empty AMI term", "spec.amiSelectorTerms", "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']", "spec.amiSelectorTerms=[{owner: self}]", "spec.amiFamily=AL2023"),
	bad(ec2, "AMI tag value empty", "spec.amiSelectorTerms[0].tags", "empty tag keys or values aren't supported", "spec.amiSelectorTerms=[{tags: {a: ''}}]", "spec.amiFamily=AL2023"),
	bad(ec2, "31 AMI terms", "spec.amiSelectorTerms", "must have at most 30 items", "spec.amiSelectorTerms="+repeat("{name: a}", 31), "spec.amiFamily=AL2023"),
	bad(ec2, "21 AMI tags", "spec.amiSelectorTerms[0].tags", "must have at most 20 items", "spec.amiSelectorTerms=[{tags: {"+manyLabels(21)+"}}]", "spec.amiFamily=AL2023"),

	// --- EC2NodeClass: subnets, security groups, capacity reservations, placement
	ok(ec2, "subnet by id", "spec.subnetSelectorTerms=[{id: subnet-0123}, {id: subnet-4567}]"),
	bad(ec2, "subnet id with tags", "spec.subnetSelectorTerms", "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term", "spec.subnetSelectorTerms=[{id: subnet-0123, tags: {a: b}}]"),
	// Upstream's exclusivity rules use all(): a mix passes, as upstream's does.
	ok(ec2, "subnet id with tags beside a tags-only term", "spec.subnetSelectorTerms=[{id: subnet-0123, tags: {a: b}}, {tags: {a: b}}]"),
	bad(ec2, "subnet terms empty", "spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty", "spec.subnetSelectorTerms=[]"),
	bad(ec2, "empty subnet term", "spec.subnetSelectorTerms", "expected at least one, got none, ['tags', 'id']", "spec.subnetSelectorTerms=[{}]"),
	bad(ec2, "subnet tag key empty", "spec.subnetSelectorTerms[0].tags", "empty tag keys or values aren't supported", "spec.subnetSelectorTerms=[{tags: {'': a}}]"),
	bad(ec2, "subnet id malformed", "spec.subnetSelectorTerms[0].id", "should match", "spec.subnetSelectorTerms=[{id: sn-0123}]"),
	bad(ec2, "31 subnet terms", "spec.subnetSelectorTerms", "must have at most 30 items", "spec.subnetSelectorTerms="+repeat("{id: subnet-1}", 31)),
	ok(ec2, "security group by id and by name", "spec.securityGroupSelectorTerms=[{id: sg-0123}, {name: eks-cluster-sg}]"),
	bad(ec2, "security group id with name", "spec.securityGroupSelectorTerms", "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term", "spec.securityGroupSelectorTerms=[{id: sg-0123, name: a}]"),
	bad(ec2, "security group name with tags", "spec.securityGroupSelectorTerms", "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term", "spec.securityGroupSelectorTerms=[{name: a, tags: {a: b}}]"),
	bad(ec2, "security group terms empty", "spec.securityGroupSelectorTerms", "securityGroupSelectorTerms cannot be empty", "spec.securityGroupSelectorTerms=[]"),
	bad(ec2, "empty security group term", "spec.securityGroupSelectorTerms", "expected at least one, got none, ['tags', 'id', 'name']", "spec.securityGroupSelectorTerms=[{}]"),
	bad(ec2, "security group id malformed", "spec.securityGroupSelectorTerms[0].id", "should match", "spec.securityGroupSelectorTerms=[{id: group-1}]"),
	ok(ec2, "capacity reservation by id", "spec.capacityReservationSelectorTerms=[{id: cr-0123456789abcdef0}]"),
	ok(ec2, "capacity reservations by tags and owner", "spec.capacityReservationSelectorTerms=[{tags: {team: ml}, ownerID: '012345678901'}]"),
	ok(ec2, "capacity reservations open", "spec.capacityReservationSelectorTerms=[{instanceMatchCriteria: open}, {instanceMatchCriteria: targeted, tags: {a: b}}]"),
	bad(ec2, "capacity reservation match criteria unknown", "spec.capacityReservationSelectorTerms[0].instanceMatchCriteria", "Unsupported value", "spec.capacityReservationSelectorTerms=[{instanceMatchCriteria: any}]"),
	bad(ec2, "capacity reservation id with tags", "spec.capacityReservationSelectorTerms", "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term", "spec.capacityReservationSelectorTerms=[{id: cr-0123, tags: {a: b}}]"),
	bad(ec2, "capacity reservation id with owner", "spec.capacityReservationSelectorTerms", "'id' is mutually exclusive", "spec.capacityReservationSelectorTerms=[{id: cr-0123, ownerID: '012345678901'}]"),
	bad(ec2, "capacity reservation owner alone", "spec.capacityReservationSelectorTerms", "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']", "spec.capacityReservationSelectorTerms=[{ownerID: '012345678901'}]"),
	bad(ec2, "capacity reservation owner of 11 digits", "spec.capacityReservationSelectorTerms[0].ownerID", "should match", "spec.capacityReservationSelectorTerms=[{ownerID: '01234567890', tags: {a: b}}]"),
	bad(ec2, "capacity reservation id malformed", "spec.capacityReservationSelectorTerms[0].id", "should match", "spec.capacityReservationSelectorTerms=[{id: cr_0123}]"),
	bad(ec2, "capacity reservation tag value empty", "spec.capacityReservationSelectorTerms[0].tags", "empty tag keys or values aren't supported", "spec.capacityReservationSelectorTerms=[{tags: {a: ''}}]"),
	ok(ec2, "placement group by name", "spec.placementGroupSelector={name: training}"),
	ok(ec2, "placement group by id", "spec.placementGroupSelector={id: pg-0123456789abcdef0}"),
	bad(ec2, "placement group name and id", "spec.placementGroupSelector", "'name' and 'id' are mutually exclusive", "spec.placementGroupSelector={name: a, id: pg-0123}"),
	bad(ec2, "placement group empty", "spec.placementGroupSelector", "expected at least one, got none, ['name', 'id']", "spec.placementGroupSelector={}"),
	bad(ec2, "placement group name empty", "spec.placementGroupSelector.name", "at least 1 chars long", "spec.placementGroupSelector={name: ''}"),
	bad(ec2, "placement group id malformed", "spec.placementGroupSelector.id", "should match", "spec.placementGroupSelector={id: placement-1}"),

	// --- EC2NodeClass: tags, networking, storage, metadata, misc
	ok(ec2, "tags", "spec.tags={team: payments, Name: node}"),
	bad(ec2, "tag key empty", "spec.tags", "empty tag keys aren't supported", "spec.tags={'': a}"),
	bad(ec2, "tag eks:eks-cluster-name", "spec.tags", "tag contains a restricted tag matching eks:eks-cluster-name", "spec.tags={eks:eks-cluster-name: a}"),
	bad(ec2, "tag kubernetes.io/cluster/", "spec.tags", "tag contains a restricted tag matching kubernetes.io/cluster/", "spec.tags={kubernetes.io/cluster/demo: owned}"),
	bad(ec2, "tag karpenter.sh/nodepool", "spec.tags", "tag contains a restricted tag matching karpenter.sh/nodepool", "spec.tags={karpenter.sh/nodepool: a}"),
	bad(ec2, "tag karpenter.sh/nodeclaim", "spec.tags", "tag contains a restricted tag matching karpenter.sh/nodeclaim", "spec.tags={karpenter.sh/nodeclaim: a}"),
	bad(ec2, "tag karpenter.k8s.aws/ec2nodeclass", "spec.tags", "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass", "spec.tags={karpenter.k8s.aws/ec2nodeclass: a}"),
	ok(ec2, "associatePublicIPAddress, detailedMonitoring, context, userData", "spec.associatePublicIPAddress=false", "spec.detailedMonitoring=true", "spec.context=ctx-1", "spec.userData=echo hi"),
	ok(ec2, "ipPrefixCount 0", "spec.ipPrefixCount=0"),
	bad(ec2, "ipPrefixCount -1", "spec.ipPrefixCount", "greater than or equal to 0", "spec.ipPrefixCount=-1"),
	ok(ec2, "instanceStorePolicy RAID0", "spec.instanceStorePolicy=RAID0"),
	bad(ec2, "instanceStorePolicy RAID1", "spec.instanceStorePolicy", "Unsupported value", "spec.instanceStorePolicy=RAID1"),
	ok(ec2, "cpuOptions", "spec.cpuOptions={nestedVirtualization: enabled}"),
	bad(ec2, "cpuOptions unknown value", "spec.cpuOptions.nestedVirtualization", "Unsupported value", "spec.cpuOptions={nestedVirtualization: on}"),
	ok(ec2, "connectionTracking", "spec.connectionTracking={tcpEstablishedTimeout: 432000, udpStreamTimeout: 60, udpTimeout: 30}"),
	bad(ec2, "connectionTracking empty", "spec.connectionTracking", "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set", "spec.connectionTracking={}"),
	bad(ec2, "tcpEstablishedTimeout 59", "spec.connectionTracking.tcpEstablishedTimeout", "greater than or equal to 60", "spec.connectionTracking={tcpEstablishedTimeout: 59}"),
	bad(ec2, "tcpEstablishedTimeout 432001", "spec.connectionTracking.tcpEstablishedTimeout", "less than or equal to 432000", "spec.connectionTracking={tcpEstablishedTimeout: 432001}"),
	bad(ec2, "udpStreamTimeout 181", "spec.connectionTracking.udpStreamTimeout", "less than or equal to 180", "spec.connectionTracking={udpStreamTimeout: 181}"),
	bad(ec2, "udpTimeout 29", "spec.connectionTracking.udpTimeout", "greater than or equal to 30", "spec.connectionTracking={udpTimeout: 29}"),
	ok(ec2, "network interfaces with EFA", "spec.networkInterfaces=[{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]"),
	bad(ec2, "network interfaces without a primary", "spec.networkInterfaces", "networkInterfaces must include a primary interface with interfaceType='interface'", "spec.networkInterfaces=[{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}]"),
	bad(ec2, "network interfaces repeated", "spec.networkInterfaces", "must not have duplicate networkCardIndex and deviceIndex pairs", "spec.networkInterfaces=[{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]"),
	bad(ec2, "two EFA interfaces on one card", "spec.networkInterfaces", "can have at most one efa device per network card", "spec.networkInterfaces=[{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}, {networkCardIndex: 0, deviceIndex: 2, interfaceType: efa-only}]"),
	bad(ec2, "network interface type unknown", "spec.networkInterfaces[0].interfaceType", "Unsupported value", "spec.networkInterfaces=[{networkCardIndex: 0, deviceIndex: 0, interfaceType: ena}]"),
	bad(ec2, "network interface without deviceIndex", "spec.networkInterfaces[0].deviceIndex", "Required value", "spec.networkInterfaces=[{networkCardIndex: 0, interfaceType: interface}]"),
	bad(ec2, "network interface card -1", "spec.networkInterfaces[0].networkCardIndex", "greater than or equal to 0", "spec.networkInterfaces=[{networkCardIndex: -1, deviceIndex: 0, interfaceType: interface}]"),
	bad(ec2, "151 network interfaces", "spec.networkInterfaces", "must have at most 150 items", "spec.networkInterfaces="+repeat("{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}", 151)),
	ok(ec2, "metadataOptions", "spec.metadataOptions={httpEndpoint: disabled, httpProtocolIPv6: enabled, httpPutResponseHopLimit: 2, httpTokens: optional}"),
	bad(ec2, "httpTokens unknown", "spec.metadataOptions.httpTokens", "Unsupported value", "spec.metadataOptions={httpTokens: never}"),
	bad(ec2, "httpEndpoint unknown", "spec.metadataOptions.httpEndpoint", "Unsupported value", "spec.metadataOptions={httpEndpoint: on}"),
	bad(ec2, "httpPutResponseHopLimit 65", "spec.metadataOptions.httpPutResponseHopLimit", "less than or equal to 64", "spec.metadataOptions={httpPutResponseHopLimit: 65}"),
	bad(ec2, "httpPutResponseHopLimit 0", "spec.metadataOptions.httpPutResponseHopLimit", "greater than or equal to 1", "spec.metadataOptions={httpPutResponseHopLimit: 0}"),
	ok(ec2, "block devices", "spec.blockDeviceMappings=[{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 10000, throughput: 125, encrypted: true, deleteOnTermination: true, kmsKeyID: alias/ebs}}, {deviceName: /dev/xvdb, ebs: {snapshotID: snap-0123, volumeInitializationRate: 300}}]"),
	ok(ec2, "volume sizes", "spec.blockDeviceMappings=[{ebs: {volumeSize: 64T}}, {ebs: {volumeSize: 58Ti}}, {ebs: {volumeSize: 64000G}}, {ebs: {volumeSize: 59000Gi}}]"),
	bad(ec2, "volume size without a unit", "spec.blockDeviceMappings[0].ebs.volumeSize", "should match", "spec.blockDeviceMappings=[{ebs: {volumeSize: '100'}}]"),
	bad(ec2, "volume size 65T", "spec.blockDeviceMappings[0].ebs.volumeSize", "should match", "spec.blockDeviceMappings=[{ebs: {volumeSize: 65T}}]"),
	bad(ec2, "volume type gp4", "spec.blockDeviceMappings[0].ebs.volumeType", "Unsupported value", "spec.blockDeviceMappings=[{ebs: {volumeSize: 20Gi, volumeType: gp4}}]"),
	bad(ec2, "ebs with neither size nor snapshot", "spec.blockDeviceMappings[0].ebs", "snapshotID or volumeSize must be defined", "spec.blockDeviceMappings=[{ebs: {volumeType: gp3}}]"),
	bad(ec2, "volumeInitializationRate without a snapshot", "spec.blockDeviceMappings[0].ebs", "snapshotID must be set when volumeInitializationRate is set", "spec.blockDeviceMappings=[{ebs: {volumeSize: 20Gi, volumeInitializationRate: 200}}]"),
	bad(ec2, "volumeInitializationRate 99", "spec.blockDeviceMappings[0].ebs.volumeInitializationRate", "greater than or equal to 100", "spec.blockDeviceMappings=[{ebs: {snapshotID: snap-1, volumeInitializationRate: 99}}]"),
	bad(ec2, "volumeInitializationRate 301", "spec.blockDeviceMappings[0].ebs.volumeInitializationRate", "less than or equal to 300", "spec.blockDeviceMappings=[{ebs: {snapshotID: snap-1, volumeInitializationRate: 301}}]"),
	bad(ec2, "two root volumes", "spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume", "spec.blockDeviceMappings=[{rootVolume: true, ebs: {volumeSize: 20Gi}}, {rootVolume: true, ebs: {volumeSize: 20Gi}}]"),
	bad(ec2, "51 block devices", "spec.blockDeviceMappings", "must have at most 50 items", "spec.blockDeviceMappings="+repeat("{ebs: {volumeSize: 1Gi}}", 51)),
	bad(ec2, "unknown field", "spec.amiSelectorTerm", "unknown field", "spec.amiSelectorTerm=[]"),
	ok(ovl, "the base"),
	{kind: ovl, name: "price", del: []string{"spec.priceAdjustment"}, set: []string{"spec.price='0.25'"}},
	ok(ovl, "price adjustment by an amount", "spec.priceAdjustment='+0.5'"),
	ok(ovl, "price adjustment -100%", "spec.priceAdjustment='-100%'"),
	ok(ovl, "capacity of an extended resource", "spec.capacity={example.com/licence: '1'}"),
	ok(ovl, "requirement on the nodepool and Gte", "spec.requirements=[{key: karpenter.sh/nodepool, operator: In, values: [general]}, {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['8']}]"),
	ok(ovl, "requirement on a template label", "spec.requirements=[{key: team, operator: In, values: [ml]}]"),
	bad(ovl, "price and priceAdjustment", "spec", "cannot set both 'price' and 'priceAdjustment'", "spec.price='0.25'"),
	{kind: ovl, name: "price with a sign", del: []string{"spec.priceAdjustment"}, set: []string{"spec.price='+0.25'"}, field: "spec.price", msg: "should match"},
	bad(ovl, "price adjustment +-", "spec.priceAdjustment", "should match", "spec.priceAdjustment='20%'"),
	bad(ovl, "price adjustment below -100%", "spec.priceAdjustment", "should match", "spec.priceAdjustment='-150%'"),
	bad(ovl, "capacity of cpu", "spec.capacity", "invalid resource restricted", "spec.capacity={cpu: '2'}"),
	bad(ovl, "weight 0", "spec.weight", "greater than or equal to 1", "spec.weight=0"),
	bad(ovl, "weight 10001", "spec.weight", "less than or equal to 10000", "spec.weight=10001"),
	{kind: ovl, name: "no requirements", del: []string{"spec.requirements"}, field: "spec.requirements", msg: "Required value"},
	bad(ovl, "In without values", "spec.requirements", "requirements with operator 'In' must have a value defined", "spec.requirements=[{key: team, operator: In}]"),
	bad(ovl, "NotIn without values", "spec.requirements", "requirements with operator 'NotIn' must have a value defined", "spec.requirements=[{key: team, operator: NotIn}]"),
	bad(ovl, "Gt with two values", "spec.requirements", "must have a single positive integer value", "spec.requirements=[{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['1', '2']}]"),
	bad(ovl, "unknown operator", "spec.requirements[0].operator", "Unsupported value", "spec.requirements=[{key: team, operator: Equals, values: [a]}]"),
	bad(ovl, "hostname", "spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`, "spec.requirements=[{key: kubernetes.io/hostname, operator: Exists}]"),
	bad(ovl, "karpenter.sh domain", "spec.requirements[0].key", `label domain "karpenter.sh" is restricted`, "spec.requirements=[{key: karpenter.sh/team, operator: Exists}]"),
	bad(ovl, "karpenter.k8s.aws misspelt", "spec.requirements[0].key", `label domain "karpenter.k8s.aws" is restricted`, "spec.requirements=[{key: karpenter.k8s.aws/instance-sise, operator: Exists}]"),
}

// manyLabels writes n distinct "kN: v" map entries.
func manyLabels(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "k%d: v", i)
	}
	return b.String()
}

func TestUpstreamAcceptsAndRejects(t *testing.T) {
	runAcceptCases(t, acceptCases)
}

func runAcceptCases(t *testing.T, cases []acceptCase) {
	vs := validators(t)
	names := map[string]bool{}
	for _, tc := range cases {
		id := tc.kind + "/" + tc.name
		if names[id] {
			t.Errorf("test bug: two cases named %s", id)
		}
		names[id] = true
		t.Run(id, func(t *testing.T) {
			obj := parseYAML(t, bases[tc.kind])
			for _, p := range tc.del {
				del(obj, p)
			}
			for _, s := range tc.set {
				path, value, found := strings.Cut(s, "=")
				if !found {
					t.Fatalf("test bug: %q is not path=value", s)
				}
				v := parseYAML(t, "v: "+value)["v"]
				if err := set(obj, path, v); err != nil {
					t.Fatalf("test bug: %v", err)
				}
			}
			problems := vs[tc.kind].validate(obj, nil)
			if tc.msg == "" {
				if len(problems) > 0 {
					t.Fatalf("want valid, got:\n%s", strings.Join(problems, "\n"))
				}
				return
			}
			for _, p := range problems {
				if strings.HasPrefix(p, tc.field+": ") && strings.Contains(p, tc.msg) {
					return
				}
			}
			t.Fatalf("want %s: …%s…, got:\n%s", tc.field, tc.msg, strings.Join(problems, "\n"))
		})
	}
}

// kubeletCases are the rules upstream's controller applies to spec.kubelet
// (ValidateKubeletConfig: a strict decode into the kubelet's
// KubeletConfiguration plus semantic checks), which Joiner's CRD applies.
var kubeletCases = []acceptCase{
	ok(ec2, "kubelet scheduling fields", "spec.kubelet={clusterDNS: [10.100.0.10], maxPods: 110, podsPerCore: 4, cpuCFSQuota: true, evictionMaxPodGracePeriod: 60, imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80}"),
	ok(ec2, "kubelet reserved", "spec.kubelet={systemReserved: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi, pid: '1000'}, kubeReserved: {cpu: 200m, memory: 300Mi}}"),
	ok(ec2, "kubelet reserved as expressions", "spec.kubelet={kubeReserved: {memory: 'memory_mib * 0.05'}, maxPods: 'min(110, max_pods)'}"),
	bad(ec2, "kubelet maxPods negative", "spec.kubelet.maxPods", "maxPods must be a non-negative integer when set to an integer", "spec.kubelet={maxPods: -1}"),
	bad(ec2, "kubelet podsPerCore negative", "spec.kubelet.podsPerCore", "greater than or equal to 0", "spec.kubelet={podsPerCore: -1}"),
	bad(ec2, "kubelet evictionMaxPodGracePeriod negative", "spec.kubelet.evictionMaxPodGracePeriod", "greater than or equal to 0", "spec.kubelet={evictionMaxPodGracePeriod: -1}"),
	bad(ec2, "kubelet systemReserved gpu", "spec.kubelet.systemReserved", "valid keys for systemReserved are ['cpu','memory','ephemeral-storage','pid']", "spec.kubelet={systemReserved: {nvidia.com/gpu: '1'}}"),
	bad(ec2, "kubelet kubeReserved negative", "spec.kubelet.kubeReserved", "kubeReserved value cannot be a negative resource quantity", "spec.kubelet={kubeReserved: {cpu: -100m}}"),
	ok(ec2, "kubelet eviction thresholds", "spec.kubelet={evictionHard: {memory.available: 5%, nodefs.available: 10%, nodefs.inodesFree: 5%, imagefs.available: 15%, imagefs.inodesFree: 5%, pid.available: 2.5%}, evictionMinimumReclaim: {memory.available: 500Mi}}"),
	ok(ec2, "kubelet soft eviction with grace periods", "spec.kubelet={evictionSoft: {memory.available: 1Gi}, evictionSoftGracePeriod: {memory.available: 1m30s}}"),
	bad(ec2, "kubelet eviction signal unknown", "spec.kubelet.evictionHard", "valid keys for evictionHard are", "spec.kubelet={evictionHard: {memory.free: 5%}}"),
	bad(ec2, "kubelet evictionMinimumReclaim signal unknown", "spec.kubelet.evictionMinimumReclaim", "valid keys for evictionMinimumReclaim are", "spec.kubelet={evictionMinimumReclaim: {disk: 1Gi}}"),
	bad(ec2, "kubelet eviction threshold 101%", "spec.kubelet.evictionHard.memory.available", "should match", "spec.kubelet={evictionHard: {memory.available: 101%}}"),
	bad(ec2, "kubelet eviction threshold negative", "spec.kubelet.evictionHard.memory.available", "should match", "spec.kubelet={evictionHard: {memory.available: -1Gi}}"),
	bad(ec2, "kubelet eviction threshold not a quantity", "spec.kubelet.evictionHard.memory.available", "should match", "spec.kubelet={evictionHard: {memory.available: lots}}"),
	bad(ec2, "kubelet eviction threshold empty", "spec.kubelet.evictionHard.memory.available", "should match", "spec.kubelet={evictionHard: {memory.available: ''}}"),
	bad(ec2, "kubelet evictionSoft without a grace period", "spec.kubelet", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod", "spec.kubelet={evictionSoft: {memory.available: 1Gi}}"),
	bad(ec2, "kubelet grace period without evictionSoft", "spec.kubelet", "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft", "spec.kubelet={evictionSoftGracePeriod: {memory.available: 1m}}"),
	bad(ec2, "kubelet grace periods for other signals", "spec.kubelet", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod", "spec.kubelet={evictionSoft: {memory.available: 1Gi}, evictionSoftGracePeriod: {nodefs.available: 1m}}"),
	bad(ec2, "kubelet grace period not a duration", "spec.kubelet.evictionSoftGracePeriod.memory.available", "should match", "spec.kubelet={evictionSoft: {memory.available: 1Gi}, evictionSoftGracePeriod: {memory.available: soon}}"),
	bad(ec2, "kubelet grace period negative", "spec.kubelet.evictionSoftGracePeriod.memory.available", "should match", "spec.kubelet={evictionSoft: {memory.available: 1Gi}, evictionSoftGracePeriod: {memory.available: -1m}}"),
	bad(ec2, "kubelet image GC thresholds inverted", "spec.kubelet", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent", "spec.kubelet={imageGCHighThresholdPercent: 80, imageGCLowThresholdPercent: 85}"),
	bad(ec2, "kubelet image GC threshold 101", "spec.kubelet.imageGCHighThresholdPercent", "less than or equal to 100", "spec.kubelet={imageGCHighThresholdPercent: 101}"),
	bad(ec2, "kubelet registerWithTaints", "spec.kubelet", "registerWithTaints can't be set", "spec.kubelet={registerWithTaints: [{key: a, effect: NoSchedule}]}"),
	// Any other KubeletConfiguration field, typed as the kubelet types it.
	ok(ec2, "kubelet other fields", "spec.kubelet={containerLogMaxSize: 50Mi, containerLogMaxFiles: 5, serializeImagePulls: false, maxParallelImagePulls: 4, featureGates: {InPlacePodVerticalScaling: true}, shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 10s, allowedUnsafeSysctls: [net.core.somaxconn], cpuManagerPolicy: static, topologyManagerPolicy: single-numa-node, memoryThrottlingFactor: 0.9, podPidsLimit: 4096}"),
	ok(ec2, "kubelet nested objects", "spec.kubelet={logging: {format: json}, authentication: {anonymous: {enabled: false}}, shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 30}]}"),
	bad(ec2, "kubelet field misspelt", "spec.kubelet.maxPod", "unknown field", "spec.kubelet={maxPod: 110}"),
	bad(ec2, "kubelet field of the wrong type", "spec.kubelet.serializeImagePulls", "must be of type boolean", "spec.kubelet={serializeImagePulls: 'no'}"),
	bad(ec2, "kubelet duration written out", "spec.kubelet.shutdownGracePeriod", "should match", "spec.kubelet={shutdownGracePeriod: 30 seconds}"),
	bad(ec2, "kubelet number as a word", "spec.kubelet.memoryThrottlingFactor", "must be of type number", "spec.kubelet={memoryThrottlingFactor: high}"),
}

// kubeletDifferences are what upstream's controller rejects in spec.kubelet
// and Joiner's CRD accepts, and why. Each is a case that Joiner accepts.
var kubeletDifferences = []struct {
	acceptCase
	reason string
}{
	{ok(ec2, "(difference) kubelet field the AMI family drops", "spec.amiSelectorTerms=[{alias: bottlerocket@latest}]", "spec.kubelet={containerLogMaxSize: 50Mi}"),
		"upstream rejects fields other than the 12 it maps unless the family renders the raw config (AL2023) or is Custom; a CEL rule would have to name every field"},
	{ok(ec2, "(difference) kubelet podsPerCore on Bottlerocket", "spec.amiSelectorTerms=[{alias: bottlerocket@latest}]", "spec.kubelet={podsPerCore: 2}"),
		"upstream rejects it per AMI family (FeatureFlags.PodsPerCoreEnabled), a fact of its bootstrap code"},
	{ok(ec2, "(difference) kubelet two clusterDNS on AL2", "spec.amiSelectorTerms=[{alias: al2@latest}]", "spec.kubelet={clusterDNS: [10.100.0.10, 10.100.0.11]}"),
		"upstream rejects more than one entry except on AL2023, per AMI family"},
	{ok(ec2, "(difference) kubelet expression that does not compile", "spec.kubelet={maxPods: 'vcpus *'}"),
		"upstream compiles maxPods, kubeReserved and systemReserved expressions with its CEL environment; Joiner does not evaluate them"},
	{ok(ec2, "(difference) kubelet nested object with an unknown field", "spec.kubelet={logging: {formatt: json}}"),
		"nested KubeletConfiguration objects (authentication, authorization, logging, tracing, memorySwap, crashLoopBackOff, reservedMemory, shutdownGracePeriodByPodPriority, userNamespaces) are accepted unchecked"},
}

func TestKubelet(t *testing.T) {
	cases := append([]acceptCase(nil), kubeletCases...)
	for _, d := range kubeletDifferences {
		cases = append(cases, d.acceptCase)
	}
	runAcceptCases(t, cases)
}

// TestDefaultsMatchUpstream: what the API server fills in on create.
func TestDefaultsMatchUpstream(t *testing.T) {
	vs := validators(t)
	tests := []struct {
		kind, name string
		set        []string
		want       map[string]string // path → the defaulted value as YAML
	}{
		{np, "an empty disruption", nil, map[string]string{
			"spec.disruption":                `{consolidateAfter: 0s, consolidationPolicy: WhenEmptyOrUnderutilized, budgets: [{nodes: 10%}]}`,
			"spec.template.spec.expireAfter": "720h",
		}},
		{np, "a policy without consolidateAfter", []string{"spec.disruption={consolidationPolicy: WhenEmpty}"}, map[string]string{
			"spec.disruption": `{consolidateAfter: 0s, consolidationPolicy: WhenEmpty, budgets: [{nodes: 10%}]}`,
		}},
		{np, "a budget without nodes", []string{"spec.disruption={budgets: [{reasons: [Drifted]}]}"}, map[string]string{
			"spec.disruption.budgets": `[{nodes: 10%, reasons: [Drifted]}]`,
		}},
		{ncl, "a claim", nil, map[string]string{"spec.expireAfter": "720h"}},
		{ec2, "no metadataOptions", nil, map[string]string{
			"spec.metadataOptions": `{httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}`,
		}},
		{ec2, "some metadataOptions", []string{"spec.metadataOptions={httpPutResponseHopLimit: 2}"}, map[string]string{
			"spec.metadataOptions": `{httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 2, httpTokens: required}`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			obj := parseYAML(t, bases[tc.kind])
			for _, s := range tc.set {
				path, value, _ := strings.Cut(s, "=")
				if err := set(obj, path, parseYAML(t, "v: "+value)["v"]); err != nil {
					t.Fatal(err)
				}
			}
			if ps := vs[tc.kind].validate(obj, nil); len(ps) > 0 {
				t.Fatalf("want valid, got %v", ps)
			}
			for path, want := range tc.want {
				got := get(obj, path)
				if w := parseYAML(t, "v: "+want)["v"]; fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("%s = %v, want %v", path, got, w)
				}
			}
		})
	}
}

func get(obj map[string]any, path string) any {
	var cur any = obj
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// TestTransitionRulesMatchUpstream: the rules that compare an update with
// the stored object.
func TestTransitionRulesMatchUpstream(t *testing.T) {
	vs := validators(t)
	tests := []struct {
		kind, name string
		before     []string // applied to the base to make the stored object
		after      []string // applied to the base to make the update
		want       string   // "" allowed
	}{
		{np, "renaming the node class", nil, []string{"spec.template.spec.nodeClassRef.name=other"}, ""},
		{np, "changing the node class kind", nil, []string{"spec.template.spec.nodeClassRef.kind=OtherNodeClass"}, "nodeClassRef.kind is immutable"},
		{np, "changing the node class group", nil, []string{"spec.template.spec.nodeClassRef.group=example.com"}, "nodeClassRef.group is immutable"},
		{np, "dynamic to static", nil, []string{"spec.replicas=2"}, "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"},
		{np, "static to dynamic", []string{"spec.replicas=2"}, nil, "Cannot transition NodePool between static"},
		{np, "scaling a static pool", []string{"spec.replicas=2"}, []string{"spec.replicas=5"}, ""},
		{ncl, "changing a claim's requirements", nil, []string{"spec.requirements[0].values=[m6i.2xlarge]"}, "spec is immutable"},
		{ec2, "changing the role", nil, []string{"spec.role=Other"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			build := func(sets []string) map[string]any {
				obj := parseYAML(t, bases[tc.kind])
				for _, s := range sets {
					path, value, _ := strings.Cut(s, "=")
					if err := set(obj, path, parseYAML(t, "v: "+value)["v"]); err != nil {
						t.Fatal(err)
					}
				}
				return obj
			}
			ps := vs[tc.kind].validate(build(tc.after), build(tc.before))
			if tc.want == "" {
				if len(ps) > 0 {
					t.Fatalf("want allowed, got %v", ps)
				}
				return
			}
			if !strings.Contains(strings.Join(ps, "\n"), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, ps)
			}
		})
	}
}
