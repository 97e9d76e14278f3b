"""The ground floor: what DRA and NVIDIA's DRA driver are, with no opinion on legacy requests.

`facts` (the driver's names and attributes, the resource.k8s.io versions and the Kubernetes
releases serving them, DeviceClasses), `gates` (DRA's feature gates and their defaults per
release), `driver_config` (the driver's opaque configuration, as the driver checks it),
`quantity` and `values` (Kubernetes quantities and the semantic versions of device attributes),
`devices` (ResourceSlices read into devices).  Pure: no I/O, no clock, no randomness, and it
imports nothing of kubectl_gpu above it (.importlinter).  Callers import its modules directly;
this package re-exports nothing, so each name has one home.
"""
