"""`tas simulate`: the closed loop measured against the systems it replaces, side by side.

One scenario, one seed, several contenders, a virtual clock. The real components decide (the
rule engine, the extender's decisions, the policy controller, the descheduler's plugins and
rails); only the cluster, the kube-scheduler and the workload are modelled, the same for all.

- `scenario`: scenario files (YAML, JSON Schema in scenarios/schema.json), every problem listed;
- `clock`: the virtual clock every component reads;
- `world`: the in-memory cluster, the workload model (`tas_inmemory.workload`) and the events;
- `pipeline`: scrapes, rate windows and delay between the model and the metric view;
- `extenders`: this project's extender and Intel TAS's, called in-process;
- `baselines`: Volcano's LoadAware, written from its documented rules;
- `contenders`: what each contender runs, as DeschedulerPolicy documents;
- `simulated_world`: the world as the closed loop (`tas_inmemory.loop`) steps it;
- `figures`: the measured figures; `runner`: a run; `report` and `charts`: the output.

Nothing in the product imports this package (an import-linter contract says so).
"""
