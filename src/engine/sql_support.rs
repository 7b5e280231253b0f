//! Engine helpers added for the SQL layer (kept in one file so that the SQL work and the engine
//! work do not edit the same files at the same time).
