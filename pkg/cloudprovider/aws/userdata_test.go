package aws

import (
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
)

// parts decodes MIME multi-part user data into (content type, body) pairs.
func parts(t *testing.T, ud string) [][2]string {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(ud))
	if err != nil {
		t.Fatalf("user data is not MIME: %v\n%s", err, ud)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var out [][2]string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading a part: %v\n%s", err, ud)
		}
		b, _ := io.ReadAll(p)
		out = append(out, [2]string{p.Header.Get("Content-Type"), string(b)})
	}
}

// nodeConfigOf is the NodeConfig YAML of a part, decoded.
func nodeConfigOf(t *testing.T, body string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("NodeConfig is not YAML: %v\n%s", err, body)
	}
	return m
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func testBootstrap(custom string) bootstrap {
	maxPods := intstr.FromInt32(50)
	return bootstrap{
		ClusterName: "production", Endpoint: "https://api.production.example", CABundle: "Q0EgUEVN", CIDR: "10.100.0.0/16",
		Kubelet: &awsv1.KubeletConfiguration{
			MaxPods:        &maxPods,
			SystemReserved: map[string]string{"cpu": "100m", "memory": "self.memory_mib * 0.01"},
			KubeReserved:   map[string]string{"cpu": "self.vcpus * 10"},
			EvictionHard:   map[string]awsv1.EvictionThreshold{"memory.available": "5%"},
		},
		MaxPods: 29,
		Labels:  map[string]string{"karpenter.sh/nodepool": "general", "team": "platform"},
		Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}},
		Custom:  custom,
	}
}

func TestNodeadmUserData(t *testing.T) {
	tests := []struct {
		name   string
		custom string
		// want: the content types after Joiner's NodeConfig, and a string each contains
		want [][2]string
	}{
		{"no user data", "", nil},
		{"a shell script", "#!/bin/bash\necho hello\n", [][2]string{{contentShellScript, "echo hello"}}},
		{"a NodeConfig", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n",
			[][2]string{{contentNodeConfig, "shutdownGracePeriod: 30s"}}},
		{"a MIME archive", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript\n\necho one\n--BOUNDARY\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n--BOUNDARY--\n",
			[][2]string{{"text/x-shellscript", "echo one"}, {contentNodeConfig, "kind: NodeConfig"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ud, err := userData(awsv1.AMIFamilyAL2023, testBootstrap(tt.custom))
			if err != nil {
				t.Fatal(err)
			}
			ps := parts(t, ud)
			if len(ps) != 1+len(tt.want) {
				t.Fatalf("%d parts, want %d:\n%s", len(ps), 1+len(tt.want), ud)
			}
			if ps[0][0] != contentNodeConfig {
				t.Fatalf("first part is %s, want Joiner's NodeConfig", ps[0][0])
			}
			cfg := nodeConfigOf(t, ps[0][1])
			for path, want := range map[string]any{
				"kind":                               "NodeConfig",
				"spec.cluster.name":                  "production",
				"spec.cluster.apiServerEndpoint":     "https://api.production.example",
				"spec.cluster.certificateAuthority":  "Q0EgUEVN",
				"spec.cluster.cidr":                  "10.100.0.0/16",
				"spec.kubelet.config.maxPods":        float64(29),
				"spec.kubelet.config.systemReserved": map[string]any{"cpu": "100m"}, // not the expression
				"spec.kubelet.config.kubeReserved":   nil,
				"spec.kubelet.config.evictionHard":   map[string]any{"memory.available": "5%"},
			} {
				if got := dig(cfg, strings.Split(path, ".")...); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v, want %v", path, got, want)
				}
			}
			flags, _ := dig(cfg, "spec", "kubelet", "flags").([]any)
			wantFlags := []any{"--node-labels=karpenter.sh/nodepool=general,team=platform", "--register-with-taints=dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute"}
			if !reflect.DeepEqual(flags, wantFlags) {
				t.Errorf("flags %v, want %v", flags, wantFlags)
			}
			for i, w := range tt.want {
				if got := ps[i+1]; got[0] != w[0] || !strings.Contains(got[1], w[1]) {
					t.Errorf("part %d = %q, want type %q containing %q", i+1, got, w[0], w[1])
				}
			}
		})
	}
}

func TestBottlerocketUserData(t *testing.T) {
	custom := "[settings.host-containers.admin]\nenabled = true\n\n[settings.kubernetes.node-labels]\nowner = \"me\"\n"
	ud, err := userData(awsv1.AMIFamilyBottlerocket, testBootstrap(custom))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := toml.Decode(ud, &doc); err != nil {
		t.Fatalf("not TOML: %v\n%s", err, ud)
	}
	for path, want := range map[string]any{
		"settings.kubernetes.cluster-name":        "production",
		"settings.kubernetes.api-server":          "https://api.production.example",
		"settings.kubernetes.cluster-certificate": "Q0EgUEVN",
		"settings.kubernetes.max-pods":            int64(29),
		"settings.kubernetes.node-labels":         map[string]any{"owner": "me", "karpenter.sh/nodepool": "general", "team": "platform"},
		"settings.kubernetes.node-taints":         map[string]any{"dedicated": []any{"gpu:NoSchedule"}, "karpenter.sh/unregistered": []any{":NoExecute"}},
		"settings.kubernetes.system-reserved":     map[string]any{"cpu": "100m"},
		"settings.kubernetes.eviction-hard":       map[string]any{"memory.available": "5%"},
		"settings.host-containers.admin.enabled":  true,
	} {
		if got := dig(doc, strings.Split(path, ".")...); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	if _, err := userData(awsv1.AMIFamilyBottlerocket, testBootstrap("not = [toml")); err == nil {
		t.Error("broken TOML user data was accepted")
	}
}

// TestLaunchTemplateRequest: the template tags its instances' network
// interfaces (CreateFleet tags instances, volumes and the fleet), and a
// public-IP choice moves the security groups to the primary interface.
func TestLaunchTemplateRequest(t *testing.T) {
	yes := true
	for _, public := range []*bool{nil, &yes} {
		lt := &launchTemplate{ImageID: "ami-1", InstanceProfile: "p", SecurityGroupIDs: []string{"sg-1"}, AssociatePublicIP: public,
			Metadata: metadataOptions(nil), Tags: map[string]string{"karpenter.sh/managed-by": "production"}}
		in := lt.request(lt.name())
		d := in.LaunchTemplateData
		if len(d.TagSpecifications) != 1 || d.TagSpecifications[0].ResourceType != "network-interface" || len(d.TagSpecifications[0].Tags) != 1 {
			t.Errorf("data tag specifications %+v, want the network interfaces'", d.TagSpecifications)
		}
		groups := d.SecurityGroupIds
		if public != nil {
			if len(d.NetworkInterfaces) != 1 || *d.NetworkInterfaces[0].AssociatePublicIpAddress != *public {
				t.Fatalf("network interfaces %+v", d.NetworkInterfaces)
			}
			groups = d.NetworkInterfaces[0].Groups
		}
		if !reflect.DeepEqual(groups, []string{"sg-1"}) {
			t.Errorf("public %v: groups %v", public, groups)
		}
		if *d.MetadataOptions.HttpPutResponseHopLimit != 1 || d.MetadataOptions.HttpTokens != "required" {
			t.Errorf("metadata %+v", d.MetadataOptions)
		}
	}
}

func TestUserDataFamilies(t *testing.T) {
	if ud, err := userData(awsv1.AMIFamilyCustom, testBootstrap("#!/bin/bash\n/etc/my-bootstrap\n")); err != nil || ud != "#!/bin/bash\n/etc/my-bootstrap\n" {
		t.Errorf("Custom: %q, %v; want the user's user data as it is", ud, err)
	}
	for _, family := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyWindows2022} {
		if _, err := userData(family, testBootstrap("")); err == nil || !strings.Contains(err.Error(), "use AL2023, Bottlerocket or Custom") {
			t.Errorf("%s: %v, want an error naming the families supported", family, err)
		}
	}
}
