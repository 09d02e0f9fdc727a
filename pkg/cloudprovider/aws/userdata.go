package aws

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
)

// bootstrap is what a node needs to join the cluster, whatever its AMI
// family writes it as.
type bootstrap struct {
	ClusterName, Endpoint, CABundle, CIDR string
	Kubelet                               *awsv1.KubeletConfiguration
	MaxPods                               int64
	Labels                                map[string]string
	Taints                                []corev1.Taint
	// Custom is the NodeClass's spec.userData, merged as upstream merges it.
	Custom string
}

// userData renders the bootstrap for an AMI family: AL2023's nodeadm
// NodeConfig, Bottlerocket's TOML settings, or (Custom) the user's own.
func userData(family string, b bootstrap) (string, error) {
	switch family {
	case awsv1.AMIFamilyAL2023:
		return nodeadmUserData(b)
	case awsv1.AMIFamilyBottlerocket:
		return bottlerocketUserData(b)
	case awsv1.AMIFamilyCustom:
		return b.Custom, nil
	}
	return "", fmt.Errorf("amiFamily %s is not supported by the aws provider: use AL2023, Bottlerocket or Custom", family)
}

const (
	mimeBoundary       = "//"
	contentNodeConfig  = "application/node.eks.aws"
	contentShellScript = `text/x-shellscript; charset="us-ascii"`
)

type mimePart struct{ contentType, content string }

// nodeadmUserData is a MIME multi-part archive: Joiner's NodeConfig first,
// then the user's parts (a MIME archive's parts, or one NodeConfig or shell
// script), so nodeadm, merging in order, lets the user's settings win, as
// upstream orders them.
func nodeadmUserData(b bootstrap) (string, error) {
	cfg, err := nodeConfig(b)
	if err != nil {
		return "", err
	}
	parts := []mimePart{{contentNodeConfig, cfg}}
	custom, err := customParts(b.Custom)
	if err != nil {
		return "", fmt.Errorf("parsing spec.userData: %w", err)
	}
	parts = append(parts, custom...)
	var s strings.Builder
	fmt.Fprintf(&s, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", mimeBoundary)
	for _, p := range parts {
		fmt.Fprintf(&s, "--%s\nContent-Type: %s\n\n%s\n", mimeBoundary, p.contentType, strings.TrimRight(p.content, "\n"))
	}
	fmt.Fprintf(&s, "--%s--\n", mimeBoundary)
	return s.String(), nil
}

// nodeConfig is the NodeConfig YAML: the cluster, the kubelet's config
// (spec.kubelet with maxPods) and its --node-labels and
// --register-with-taints flags.
func nodeConfig(b bootstrap) (string, error) {
	kubelet, err := kubeletConfig(b)
	if err != nil {
		return "", err
	}
	cluster := map[string]any{"name": b.ClusterName, "apiServerEndpoint": b.Endpoint, "certificateAuthority": b.CABundle}
	if b.CIDR != "" {
		cluster["cidr"] = b.CIDR
	}
	k := map[string]any{"config": kubelet}
	var flags []string
	if len(b.Labels) > 0 {
		flags = append(flags, "--node-labels="+labelsArg(b.Labels))
	}
	if len(b.Taints) > 0 {
		flags = append(flags, "--register-with-taints="+taintsArg(b.Taints))
	}
	if len(flags) > 0 {
		k["flags"] = flags
	}
	out, err := yaml.Marshal(map[string]any{
		"apiVersion": "node.eks.aws/v1alpha1",
		"kind":       "NodeConfig",
		"spec":       map[string]any{"cluster": cluster, "kubelet": k},
	})
	if err != nil {
		return "", err
	}
	return "# Joiner's NodeConfig\n" + string(out), nil
}

// kubeletConfig is spec.kubelet as the kubelet's configuration, with the
// instance type's maxPods unless spec.kubelet sets a number.
func kubeletConfig(b bootstrap) (map[string]any, error) {
	out := map[string]any{}
	if b.Kubelet != nil {
		raw, err := json.Marshal(b.Kubelet)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
	}
	delete(out, "registerWithTaints") // a flag, from the claim's taints
	out["maxPods"] = b.MaxPods
	// Reservations written as expressions are Joiner's to evaluate, not
	// the kubelet's: it gets the quantities only (and reserves its own
	// defaults for the rest).
	for _, key := range []string{"kubeReserved", "systemReserved"} {
		m, _ := out[key].(map[string]any)
		for k, v := range m {
			if s, _ := v.(string); k != "pid" && !isQuantity(s) {
				delete(m, k)
			}
		}
		if m != nil && len(m) == 0 {
			delete(out, key)
		}
	}
	return out, nil
}

func isQuantity(s string) bool {
	_, err := resource.ParseQuantity(s)
	return err == nil
}

func labelsArg(labels map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		kv = append(kv, k+"="+labels[k])
	}
	return strings.Join(kv, ",")
}

func taintsArg(taints []corev1.Taint) string {
	var out []string
	for _, t := range taints {
		out = append(out, t.ToString())
	}
	return strings.Join(out, ",")
}

// customParts splits the user's user data into MIME parts: a MIME
// archive's own, else one part, a NodeConfig if it is YAML, else a shell
// script.
func customParts(custom string) ([]mimePart, error) {
	trimmed := strings.TrimSpace(custom)
	if trimmed == "" {
		return nil, nil
	}
	if !strings.HasPrefix(trimmed, "MIME-Version:") && !strings.HasPrefix(trimmed, "Content-Type:") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(custom), &m); err == nil && m != nil {
			return []mimePart{{contentNodeConfig, custom}}, nil
		}
		return []mimePart{{contentShellScript, custom}}, nil
	}
	msg, err := mail.ReadMessage(strings.NewReader(trimmed + "\n"))
	if err != nil {
		return nil, err
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("MIME user data of type %s, not multipart", mediaType)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var out []mimePart
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return nil, err
		}
		out = append(out, mimePart{part.Header.Get("Content-Type"), string(body)})
	}
}

// bottlerocketUserData is the user's TOML with Joiner's settings.kubernetes
// over it: the cluster, max-pods, node labels and taints (merged with the
// user's), and the kubelet's reservations and eviction thresholds.
func bottlerocketUserData(b bootstrap) (string, error) {
	doc := map[string]any{}
	if strings.TrimSpace(b.Custom) != "" {
		if _, err := toml.Decode(b.Custom, &doc); err != nil {
			return "", fmt.Errorf("parsing spec.userData as Bottlerocket TOML: %w", err)
		}
	}
	k := table(table(doc, "settings"), "kubernetes")
	k["cluster-name"] = b.ClusterName
	k["api-server"] = b.Endpoint
	k["cluster-certificate"] = b.CABundle
	k["max-pods"] = b.MaxPods
	if len(b.Labels) > 0 {
		labels := table(k, "node-labels")
		for key, v := range b.Labels {
			labels[key] = v
		}
	}
	if len(b.Taints) > 0 {
		taints := table(k, "node-taints")
		for _, t := range b.Taints {
			v := t.Value + ":" + string(t.Effect)
			have, _ := taints[t.Key].([]any)
			taints[t.Key] = append(have, v)
		}
	}
	if kc := b.Kubelet; kc != nil {
		setStrings(k, "kube-reserved", kc.KubeReserved)
		setStrings(k, "system-reserved", kc.SystemReserved)
		hard := map[string]string{}
		for sig, v := range kc.EvictionHard {
			hard[sig] = string(v)
		}
		setStrings(k, "eviction-hard", hard)
		if len(kc.ClusterDNS) > 0 {
			k["cluster-dns-ip"] = kc.ClusterDNS
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// table is m[key] as a TOML table, made when missing.
func table(m map[string]any, key string) map[string]any {
	if t, ok := m[key].(map[string]any); ok {
		return t
	}
	t := map[string]any{}
	m[key] = t
	return t
}

func setStrings(k map[string]any, key string, values map[string]string) {
	if len(values) == 0 {
		return
	}
	t := table(k, key)
	for name, v := range values {
		if name == "pid" || isQuantity(strings.TrimSuffix(v, "%")) { // expressions are not the kubelet's
			t[name] = v
		}
	}
	if len(t) == 0 {
		delete(k, key)
	}
}
