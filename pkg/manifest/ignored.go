package manifest

import (
	"fmt"
	"strings"
)

// Ignored is a document a host read and does not act on: named in its
// output (kind, name, file:line and why), never dropped in silence — a
// prediction that leaves out a user's CapacityBuffer without a word is
// wrong and looks right.
type Ignored struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	File       string `json:"file"`
	Line       int    `json:"line"`
	Why        string `json:"why"`
}

// NewIgnored names document d as ignored; why "" says why by its kind
// (WhyIgnored).
func NewIgnored(d *Document, why string) Ignored {
	if why == "" {
		why = WhyIgnored(d.APIVersion, d.Kind)
	}
	return Ignored{Kind: d.Kind, APIVersion: d.APIVersion, Namespace: d.Namespace, Name: d.Name, File: d.File, Line: d.Line, Why: why}
}

// unmodelled says, for the kinds a user may expect Joiner to act on, what
// leaving them out means.
var unmodelled = map[string]string{
	"ResourceClaim":         "Dynamic Resource Allocation is not modelled: as upstream Karpenter by default (--ignore-dra-requests=true), a pod that asks for devices gets no node, and nothing binds it",
	"ResourceClaimTemplate": "Dynamic Resource Allocation is not modelled: as upstream Karpenter by default (--ignore-dra-requests=true), a pod that asks for devices gets no node, and nothing binds it",
	"ResourceSlice":         "Dynamic Resource Allocation is not modelled: the devices it offers are left out",
	"DeviceClass":           "Dynamic Resource Allocation is not modelled: the devices it selects are left out",
	"VerticalPodAutoscaler": "VerticalPodAutoscalers are not modelled: pods keep the requests written in their templates",
	"LimitRange":            "LimitRanges are not modelled: pods without requests are not given its defaults",
	"ResourceQuota":         "ResourceQuotas are not modelled: pods are not held back by them",
}

// inert are kinds that have no bearing on where pods run or what nodes
// cost.
var inert = map[string]bool{
	"Namespace": true, "ConfigMap": true, "Secret": true, "ServiceAccount": true, "Role": true, "RoleBinding": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Ingress": true, "IngressClass": true, "NetworkPolicy": true,
	"Endpoints": true, "EndpointSlice": true, "CustomResourceDefinition": true, "Lease": true, "Event": true,
}

// Unmodelled says, for a kind a user may expect Joiner to act on and it
// does not yet, what leaving it out means; ok is false for other kinds.
func Unmodelled(kind string) (why string, ok bool) {
	why, ok = unmodelled[kind]
	return why, ok
}

// WhyIgnored says why a document of the kind is not acted on.
func WhyIgnored(apiVersion, kind string) string {
	if why, ok := unmodelled[kind]; ok {
		if strings.HasPrefix(apiVersion, "resource.k8s.io/") && apiVersion != "resource.k8s.io/v1" {
			return apiVersion + " is not read: Joiner reads Dynamic Resource Allocation as resource.k8s.io/v1 (served since Kubernetes 1.34); write it as v1 (kubectl get -o yaml of the object a 1.34+ API server stored gives it)"
		}
		return why
	}
	if inert[kind] {
		return "no bearing on scheduling or cost"
	}
	return fmt.Sprintf("%s %s is not modelled", apiVersion, kind)
}

// Object is the ignored object as kind namespace/name.
func (i Ignored) Object() string {
	if i.Namespace != "" {
		return i.Kind + " " + i.Namespace + "/" + i.Name
	}
	return i.Kind + " " + i.Name
}

// At is where the object was read: file:line.
func (i Ignored) At() string {
	if i.Line > 0 {
		return fmt.Sprintf("%s:%d", i.File, i.Line)
	}
	return i.File
}

func (i Ignored) String() string { return fmt.Sprintf("%s (%s): %s", i.Object(), i.At(), i.Why) }

// IgnoredLines says what was ignored, one line per reason: the objects
// with their places, at most perLine of them (the rest counted) when
// perLine > 0.
func IgnoredLines(ig []Ignored, perLine int) []string {
	var whys []string
	byWhy := map[string][]Ignored{}
	for _, i := range ig {
		if _, ok := byWhy[i.Why]; !ok {
			whys = append(whys, i.Why)
		}
		byWhy[i.Why] = append(byWhy[i.Why], i)
	}
	lines := make([]string, 0, len(whys))
	for _, why := range whys {
		objs := byWhy[why]
		names := make([]string, 0, len(objs))
		for k, o := range objs {
			if perLine > 0 && k == perLine {
				names = append(names, fmt.Sprintf("and %d more", len(objs)-perLine))
				break
			}
			names = append(names, o.Object()+" ("+o.At()+")")
		}
		lines = append(lines, strings.Join(names, ", ")+": "+why)
	}
	return lines
}
