(history.back(), true)
