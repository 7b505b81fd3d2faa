(reps) => searchPass(reps)
