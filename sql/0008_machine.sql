-- What machine a run ran on, from its offer when it was created: {"family", "vcpus", "memory_gib", "gpus",
-- "gpu_type", "cpu_model"} (fields the provider does not say are left out). The planner predicts a config from
-- measured configs of its family and from the resources it shares with others (billing/model/resource_model.h).
ALTER TABLE runs ADD COLUMN machine TEXT NOT NULL DEFAULT '{}';
