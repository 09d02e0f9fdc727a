package cloudprovider

import (
	resourceapi "k8s.io/api/resource/v1"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// InstanceType is a machine shape with the offerings it can be bought as.
type InstanceType struct {
	Name string
	// Requirements are the labels a node of this type carries, zone and
	// capacity type as the sets its offerings span.
	Requirements scheduling.Requirements
	Offerings    Offerings
	// Capacity is what the machine has, after the hypervisor's share.
	Capacity corev1.ResourceList
	// Overhead is what the kubelet, the system and eviction keep back.
	Overhead Overhead
	// Devices are the ResourceSlices a node of the type publishes once its
	// Dynamic Resource Allocation drivers run (upstream's
	// ResourceSliceTemplates): what provisioning allocates a pod's device
	// claims from on a node not launched yet. Empty: no DRA devices.
	Devices []DeviceSlice
}

// DeviceSlice is one driver's devices on a node of an instance type; the
// node's name and the pool are filled in for each node planned.
type DeviceSlice struct {
	Driver  string
	Devices []resourceapi.Device
}

// Overhead is the part of capacity pods cannot use.
type Overhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Total is the sum of the overheads.
func (o Overhead) Total() corev1.ResourceList {
	return scheduling.Add(o.KubeReserved, o.SystemReserved, o.EvictionThreshold)
}

// Allocatable is capacity less overhead: what pods may request.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	return scheduling.Subtract(it.Capacity, it.Overhead.Total())
}

// Offering is one way to buy an instance type: a zone and a capacity type,
// at a price, available or not right now.
type Offering struct {
	Zone         string
	CapacityType string
	// Price in USD per hour.
	Price     float64
	Available bool
	// Reservation is set on a reserved offering (CapacityType reserved):
	// the capacity reservation it launches into. nil on the others.
	Reservation *Reservation
}

// Reservation is the capacity reservation behind a reserved offering, as
// upstream's AWS provider resolves an EC2NodeClass's
// capacityReservationSelectorTerms: an ID, how many instances it can still
// take, and its kind.
type Reservation struct {
	ID string
	// Capacity is how many more instances the reservation can take now
	// (upstream's Offering.ReservationCapacity). A reserved offering at 0
	// is not Available.
	Capacity int
	// Type is "default" (an On-Demand Capacity Reservation) or
	// "capacity-block".
	Type string
	// Interruptible: the owner may reclaim the capacity (an interruptible
	// ODCR), with a two-minute warning.
	Interruptible bool
}

// Reservation types, as the capacity-reservation-type label spells them.
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
)

// The labels of a reserved node, as upstream's AWS provider spells them
// (ReservationIDLabel is what upstream's core calls
// cloudprovider.ReservationIDLabel, which the provider sets).
const (
	ReservationIDLabel            = awsv1.LabelCapacityReservationID
	ReservationTypeLabel          = awsv1.LabelCapacityReservationType
	ReservationInterruptibleLabel = awsv1.LabelCapacityReservationInterruptible
)

// ReservationID is the offering's reservation's ID, "" when it has none.
func (o *Offering) ReservationID() string {
	if o.Reservation == nil {
		return ""
	}
	return o.Reservation.ID
}

// Requirements are the offering's zone and capacity type as requirements.
func (o *Offering) Requirements() scheduling.Requirements {
	return scheduling.NewRequirements(
		scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, o.Zone),
		scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, o.CapacityType),
	)
}

// Offerings is a list of offerings; its methods compose:
// its.Offerings.Available().Compatible(reqs).Cheapest().
type Offerings []*Offering

// Available keeps the offerings that can be launched now.
func (os Offerings) Available() Offerings {
	var out Offerings
	for _, o := range os {
		if o.Available {
			out = append(out, o)
		}
	}
	return out
}

// Compatible keeps the offerings whose zone and capacity type the
// requirements allow.
func (os Offerings) Compatible(reqs scheduling.Requirements) Offerings {
	zone, ct := reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)
	var out Offerings
	for _, o := range os {
		if zone.Has(o.Zone) && ct.Has(o.CapacityType) {
			out = append(out, o)
		}
	}
	return out
}

// Cheapest returns the lowest-priced offering (ties: zone, then capacity
// type, alphabetically), or nil.
func (os Offerings) Cheapest() *Offering {
	var best *Offering
	for _, o := range os {
		if best == nil || o.Price < best.Price ||
			(o.Price == best.Price && (o.Zone < best.Zone || (o.Zone == best.Zone && o.CapacityType < best.CapacityType))) {
			best = o
		}
	}
	return best
}

// MostExpensive returns the highest-priced offering, or nil.
func (os Offerings) MostExpensive() *Offering {
	var worst *Offering
	for _, o := range os {
		if worst == nil || o.Price > worst.Price {
			worst = o
		}
	}
	return worst
}

// HasCompatible reports whether some available offering satisfies reqs.
func (os Offerings) HasCompatible(reqs scheduling.Requirements) bool {
	zone, ct := reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)
	for _, o := range os {
		if o.Available && zone.Has(o.Zone) && ct.Has(o.CapacityType) {
			return true
		}
	}
	return false
}

// CheapestPrice is the price of the cheapest available offering compatible
// with reqs, or +Inf. It allocates nothing: it is on the scheduler's hot path.
func (it *InstanceType) CheapestPrice(reqs scheduling.Requirements) float64 {
	return it.Offerings.cheapestPrice(reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType))
}

// CheapestPriceWith is CheapestPrice for a zone and capacity-type
// requirement already looked up.
func (os Offerings) CheapestPriceWith(zone, ct *scheduling.Requirement) float64 {
	return os.cheapestPrice(zone, ct)
}

func (os Offerings) cheapestPrice(zone, ct *scheduling.Requirement) float64 {
	best := math.Inf(1)
	for _, o := range os {
		if o.Available && o.Price < best && zone.Has(o.Zone) && ct.Has(o.CapacityType) {
			best = o.Price
		}
	}
	return best
}

// SortByPrice orders instance types by their cheapest available offering
// compatible with reqs, then by name, so the cloud can fall back in order.
func SortByPrice(its []*InstanceType, reqs scheduling.Requirements) {
	zone, ct := reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)
	type priced struct {
		it    *InstanceType
		price float64
	}
	ps := make([]priced, len(its))
	for i, it := range its {
		ps[i] = priced{it, it.Offerings.cheapestPrice(zone, ct)}
	}
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].price != ps[j].price {
			return ps[i].price < ps[j].price
		}
		return ps[i].it.Name < ps[j].it.Name
	})
	for i := range ps {
		its[i] = ps[i].it
	}
}
