package sim

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// systemPriorityClasses are the ones every cluster has.
var systemPriorityClasses = map[string]int32{
	"system-cluster-critical": 2000000000,
	"system-node-critical":    2000001000,
}

// priorities does what the Priority admission plugin does to a new pod:
// its priorityClassName (or the global default) becomes spec.priority and
// spec.preemptionPolicy.
type priorities struct {
	classes map[string]*schedulingv1.PriorityClass
	global  *schedulingv1.PriorityClass
}

func newPriorities(classes []*schedulingv1.PriorityClass) (*priorities, error) {
	p := &priorities{classes: map[string]*schedulingv1.PriorityClass{}}
	for _, pc := range classes {
		if _, dup := p.classes[pc.Name]; dup {
			return nil, fmt.Errorf("PriorityClass %s is defined twice", pc.Name)
		}
		p.classes[pc.Name] = pc
		if pc.GlobalDefault {
			if p.global != nil {
				return nil, fmt.Errorf("PriorityClasses %s and %s are both globalDefault: keep one", p.global.Name, pc.Name)
			}
			p.global = pc
		}
	}
	return p, nil
}

// resolve sets the pod spec's priority; what names the spec in errors.
func (p *priorities) resolve(spec *corev1.PodSpec, what string) error {
	name := spec.PriorityClassName
	var pc *schedulingv1.PriorityClass
	switch {
	case name == "":
		pc = p.global
	case p.classes[name] != nil:
		pc = p.classes[name]
	default:
		v, ok := systemPriorityClasses[name]
		if !ok {
			return fmt.Errorf("%s: priorityClassName %q: no PriorityClass of that name in the scenario; add a scheduling.k8s.io/v1 PriorityClass manifest", what, name)
		}
		spec.Priority = &v
		return nil
	}
	if pc == nil {
		if spec.Priority == nil {
			zero := int32(0)
			spec.Priority = &zero
		}
		return nil
	}
	v := pc.Value
	spec.Priority = &v
	if pc.PreemptionPolicy != nil {
		pol := *pc.PreemptionPolicy
		spec.PreemptionPolicy = &pol
	}
	return nil
}
