package cluster

import "github.com/starpod/starpod/scheduler"

// The labels the scheduler puts on jobs and pod templates, read back here.
const (
	labelName      = scheduler.LabelName
	labelManagedBy = scheduler.LabelManagedBy
	labelAppName   = scheduler.LabelAppName
	labelRoleName  = scheduler.LabelRoleName
	labelRoleIndex = scheduler.LabelRoleIndex
	labelReplicaID = scheduler.LabelReplicaID
	managedByValue = scheduler.ManagedBy
)
