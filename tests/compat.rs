//! placeholder until the compatibility table is written
