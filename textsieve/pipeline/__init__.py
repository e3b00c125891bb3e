"""The pipeline file (`textsieve run`): its schema from the stage configs (`config`), the stage
configs it builds (`build`), the planned columns (`columns`), the plan (`plan`) and the
resumable run (`run`)."""
