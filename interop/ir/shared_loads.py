"""A value replaced by a load of the shared buffer that holds its data."""
from __future__ import annotations


def load_instead(builder, op, buffer, attribute: str) -> None:
    """Replace ``op``'s result by a ``local_load`` of ``buffer`` (which holds that value's data) in
    the result's layout, at the builder's insertion point, keeping its location and the string
    attribute ``attribute`` (a boundary's tag)."""
    result = op.get_result(0)
    loaded = builder.create_local_load(result.get_type(), buffer)
    loaded.set_loc(result.get_loc())
    loaded.set_attr(attribute, builder.get_string_attr(op.get_str_attr(attribute)))
    result.replace_all_uses_with(loaded)
