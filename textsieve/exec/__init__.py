"""Execution: the local ordered process pool (`local`, with the clean-main spawn context), the
Ray executor (`ray_exec`), progress bars (`progress`), memory budgets (`budget`) and the Arrow
allocator choice (`arrow_memory`)."""
