"""Node telemetry: one metric view shared by every component, with one module per source."""
