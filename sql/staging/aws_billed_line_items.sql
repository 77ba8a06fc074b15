-- AWS CUR 2.0 line items the bill counts: every line item but the split cost allocation rows.
-- grain: one row per billed line item (line_id)
-- Split cost allocation rows (EKS pods, ECS tasks) re-split instance rows that are already here; counting both would
-- charge the instance twice (staging.aws_cur2_split_line_items reads them). staging.aws_cost_lines and
-- staging.aws_line_profiles read these.
with aws_line_items as (
    select * from staging.aws_cur2_line_items
),

final as (
    select aws_line_items.* from aws_line_items
    where coalesce(aws_line_items.operation, '') not in ('EKSPod-EC2', 'ECSTask-EC2')
)

select * from final
