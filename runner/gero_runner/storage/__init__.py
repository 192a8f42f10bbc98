"""Where evidence lives: content-addressed artifact directories and atomic Parquet files."""
