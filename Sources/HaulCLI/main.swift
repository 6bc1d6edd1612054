print("haul")
