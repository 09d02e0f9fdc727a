package manifest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityFields are where Karpenter objects hold Kubernetes quantities, by
// kind: * is any map key (the resource name), [] any list item. Some of these
// the schema leaves as plain strings (upstream's kubelet is an open map), and
// Karpenter only fails on them once a node is built; they are checked here.
var quantityFields = map[string][]struct {
	path    string
	percent bool // an eviction threshold may be a percentage
}{
	"NodePool":  {{path: "spec.limits.*"}},
	"NodeClaim": {{path: "spec.resources.requests.*"}},
	"EC2NodeClass": {
		{path: "spec.kubelet.kubeReserved.*"}, {path: "spec.kubelet.systemReserved.*"},
		{path: "spec.kubelet.evictionHard.*", percent: true}, {path: "spec.kubelet.evictionSoft.*", percent: true},
		{path: "spec.kubelet.evictionMinimumReclaim.*", percent: true},
		{path: "spec.blockDeviceMappings[].ebs.volumeSize"},
	},
}

var quantityLike = regexp.MustCompile(`^\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))\s*([A-Za-z]*)\s*$`)

// quantityProblems names every value in a quantity field that is not a
// Kubernetes quantity, with the value it should be.
func quantityProblems(d *Document) Problems {
	var ps Problems
	for _, qf := range quantityFields[d.Kind] {
		for _, m := range matchPath(d.Object, strings.Split(strings.ReplaceAll(qf.path, "[]", ".[]"), "."), "") {
			str, ok := m.value.(string)
			if !ok {
				continue // numbers are quantities; other types are the schema's to report
			}
			if qf.percent && strings.HasSuffix(strings.TrimSpace(str), "%") {
				pct := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(str), "%"))
				if f, err := strconv.ParseFloat(pct, 64); err != nil || f < 0 || f > 100 {
					ps = append(ps, d.problem(m.path, fmt.Sprintf("%q is not a percentage from 0%% to 100%%", str),
						`write a percentage such as "5%" or a quantity such as 500Mi`))
				} else if pct+"%" != str {
					ps = append(ps, d.problem(m.path, fmt.Sprintf("%q has spaces the kubelet does not accept", str), fmt.Sprintf("write %q", pct+"%")))
				}
				continue
			}
			if _, err := resource.ParseQuantity(str); err == nil {
				continue
			}
			key := m.key
			if strings.HasSuffix(m.path, "volumeSize") {
				key = "storage"
			}
			if strings.HasPrefix(m.path, "spec.kubelet.") && strings.Contains(m.path, "Reserved") && !quantityLike.MatchString(str) {
				p := d.problem(m.path, fmt.Sprintf("%q is not a quantity; upstream Karpenter reads it as a CEL expression (NodeClassCEL feature gate), which Joiner does not support yet", str),
					"keep it for Karpenter; Joiner simulates the node without this reservation")
				p.Warning = true
				ps = append(ps, p)
				continue
			}
			ps = append(ps, d.problem(m.path, fmt.Sprintf("%q is not a Kubernetes quantity", str), QuantityFix(key, str)))
		}
	}
	return ps
}

type match struct {
	path, key string
	value     any
}

// matchPath finds the values at a pattern path: * any map key, [] any item.
func matchPath(v any, segs []string, at string) []match {
	if len(segs) == 0 {
		key := at[strings.LastIndexAny(at, ".]")+1:]
		return []match{{path: at, key: key, value: v}}
	}
	join := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	var out []match
	switch seg := segs[0]; {
	case seg == "*":
		m, _ := v.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, r := range matchPath(m[k], segs[1:], join(k)) {
				r.key = k
				out = append(out, r)
			}
		}
	case seg == "[]":
		l, _ := v.([]any)
		for i, x := range l {
			out = append(out, matchPath(x, segs[1:], fmt.Sprintf("%s[%d]", at, i))...)
		}
	default:
		m, _ := v.(map[string]any)
		if x, ok := m[seg]; ok {
			out = append(out, matchPath(x, segs[1:], join(seg))...)
		}
	}
	return out
}

// QuantityFix says how to write a quantity for resource (cpu, memory, …),
// with the corrected value when the mistake is plain (0.5cores → 500m,
// 1GB → 1G, 2 Gi → 2Gi).
func QuantityFix(resourceName, value string) string {
	var hint string
	switch resourceName {
	case "cpu":
		hint = "cpu in cores (2, 0.5) or millicores (500m), no unit word"
	case "memory", "ephemeral-storage", "storage":
		hint = "bytes with a suffix: Ki, Mi, Gi, Ti (powers of 2) or k, M, G, T (powers of 10), no B"
	case "":
		hint = "cpu as 500m or 0.5, memory as 512Mi or 2Gi"
	default:
		hint = "a number with an optional suffix (m, k, M, G, Ki, Mi, Gi), no unit word"
	}
	if s := suggestQuantity(resourceName, value); s != "" {
		return fmt.Sprintf("write a Kubernetes quantity: %s: %s (%s)", resourceName, s, hint)
	}
	return "write a Kubernetes quantity: " + hint
}

func suggestQuantity(resourceName, value string) string {
	m := quantityLike.FindStringSubmatch(value)
	if m == nil {
		return ""
	}
	num, unit := m[1], strings.ToLower(m[2])
	if resourceName == "cpu" {
		switch unit {
		case "", "core", "cores", "cpu", "cpus", "vcpu", "vcpus", "c":
			if f, err := strconv.ParseFloat(num, 64); err == nil && f != float64(int64(f)) {
				return strconv.FormatFloat(f*1000, 'f', -1, 64) + "m"
			}
			return num
		case "m", "mc", "mb", "millicore", "millicores", "millicpu", "millicpus", "mcpu":
			return num + "m"
		}
		return ""
	}
	decimal := map[string]string{"": "", "b": "", "byte": "", "bytes": "", "k": "k", "kb": "k", "mb": "M", "gb": "G", "g": "G", "tb": "T", "t": "T", "pb": "P"}
	binary := map[string]string{"ki": "Ki", "kib": "Ki", "mi": "Mi", "mib": "Mi", "gi": "Gi", "gib": "Gi", "ti": "Ti", "tib": "Ti", "pi": "Pi", "pib": "Pi"}
	if s, ok := binary[unit]; ok {
		return num + s
	}
	if s, ok := decimal[unit]; ok {
		if s == "" {
			return num
		}
		bin := map[string]string{"k": "Ki", "M": "Mi", "G": "Gi", "T": "Ti", "P": "Pi"}[s]
		return fmt.Sprintf("%s%s, or %s%s for powers of 2", num, s, num, bin)
	}
	return ""
}
