-- Telemetry gpu_usage: measured utilisation of the attempts' held GPUs in idle and busy windows (a prometheus source).
-- grain: one row per (attempt_id, resource_id, gpu, started_at); a held interval without samples: one unsampled row
with source as (
    select * from raw.gpu_usage
),

final as (
    select * from source
)

select * from final
